package posting_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// An exhaustive exploration of the post protocol (R-CHANNEL-1..6), in the
// explorer's manner (internal/explore) but on the posting package alone:
// every interleaving, call by call, of three invocations — the Started
// post's message, a copy of it (SQS delivers at least once; the
// sweeper's hand-back), and the Finished post's message — on the real
// Posting over the in-memory store, with the channel's first send taking
// the post and losing its answer, and the clock free to jump past a lease
// at any point. Then every message is run again to the end, as the queue
// would. Checked on every path: a channel that can be asked gets each
// post at most once and never a Started post after the Finished one; a
// webhook gets the Finished post at least once, every copy of an id with
// the same body; every row ends sent or settled, and none is lost.

// sched runs workers one call at a time, in an order a path chooses.
type sched struct {
	mu      sync.Mutex
	waiting map[int]chan struct{} // worker → its grant
	arrived chan struct{}
}

type workerKey struct{}

// gate blocks the calling worker until the scheduler grants its next call.
func (s *sched) gate(ctx context.Context) {
	w, ok := ctx.Value(workerKey{}).(int)
	if !ok || s == nil {
		return // the drain: unscheduled
	}
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiting[w] = ch
	s.mu.Unlock()
	s.arrived <- struct{}{}
	<-ch
}

type gatedPosts struct {
	store.Posts
	s *sched
}

func (g gatedPosts) EnsurePost(ctx context.Context, r channel.Row) (channel.Row, bool, error) {
	g.s.gate(ctx)
	return g.Posts.EnsurePost(ctx, r)
}
func (g gatedPosts) GetPost(ctx context.Context, id string) (channel.Row, error) {
	g.s.gate(ctx)
	return g.Posts.GetPost(ctx, id)
}
func (g gatedPosts) ClaimPost(ctx context.Context, id, token string, lease time.Duration) (channel.Row, error) {
	g.s.gate(ctx)
	return g.Posts.ClaimPost(ctx, id, token, lease)
}
func (g gatedPosts) MarkPostSent(ctx context.Context, id, token string, r channel.Receipt) (channel.Row, error) {
	g.s.gate(ctx)
	return g.Posts.MarkPostSent(ctx, id, token, r)
}
func (g gatedPosts) ReleasePost(ctx context.Context, id, token, class string) (channel.Row, error) {
	g.s.gate(ctx)
	return g.Posts.ReleasePost(ctx, id, token, class)
}
func (g gatedPosts) SettlePost(ctx context.Context, r channel.Row, token, reason string) (channel.Row, error) {
	g.s.gate(ctx)
	return g.Posts.SettlePost(ctx, r, token, reason)
}

type gatedHost struct {
	*host
	s   *sched
	now func() time.Time
}

// late is what the HTTP client does with a request whose deadline passed
// before it reached the channel (the gate is the moment it would): it
// never arrives. The deadline is channel.SendBy, on the explorer's clock.
func (g gatedHost) late(ctx context.Context) bool {
	by, ok := channel.SendBy(ctx)
	return ok && !g.now().Before(by)
}

func (g gatedHost) Find(ctx context.Context, p channel.Post) (channel.Receipt, bool, error) {
	g.s.gate(ctx)
	if g.late(ctx) {
		return channel.Receipt{}, false, context.DeadlineExceeded
	}
	return g.host.Find(ctx, p)
}
func (g gatedHost) Send(ctx context.Context, p channel.Post, prior channel.Receipt) (channel.Receipt, error) {
	g.s.gate(ctx)
	if g.late(ctx) {
		return channel.Receipt{}, context.DeadlineExceeded
	}
	return g.host.Send(ctx, p, prior)
}

// path runs one path: choices fixes the decisions it has; it returns the
// number of options at each decision taken, and what broke.
func explorePath(t *testing.T, lookless bool, choices []int) (options []int, broke string) {
	h := &host{name: "github-check", lookless: lookless, loseNext: 1}
	if lookless {
		h.name = "webhook:chat"
	}
	r := newRig(t, h)
	s := &sched{waiting: map[int]chan struct{}{}, arrived: make(chan struct{}, 8)}
	var clock sync.Mutex
	now := r.now
	r.posts = nil
	fake := func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	inner := newMemPosts(fake)
	r.p.Posts, r.p.Now = gatedPosts{inner, s}, fake
	r.p.Channels = []channel.Channel{gatedHost{h, s, fake}}
	ctx := context.Background()
	// The rows and their messages, as the announcements make them.
	if err := r.p.Announce(ctx, r.j, channel.Started, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	msgs := r.q.msgs
	runs := []job.Message{msgs[0], msgs[0], msgs[1]}
	done := make(chan int, len(runs))
	for i, m := range runs {
		go func() {
			_ = r.p.Handle(context.WithValue(ctx, workerKey{}, i), m, 1)
			done <- i
		}()
	}
	live, ticks, step := len(runs), 0, 0
	for live > 0 {
		// Wait until every live worker is at a gate or done.
		for {
			s.mu.Lock()
			n := len(s.waiting)
			s.mu.Unlock()
			if n == live {
				break
			}
			select {
			case <-s.arrived:
			case <-done:
				live--
			}
		}
		if live == 0 {
			break
		}
		for len(s.arrived) > 0 {
			<-s.arrived
		}
		s.mu.Lock()
		var ws []int
		for w := range s.waiting {
			ws = append(ws, w)
		}
		s.mu.Unlock()
		sortInts(ws)
		k := len(ws)
		if ticks < 1 {
			k++ // the clock may jump past the lease
		}
		c := 0
		if step < len(choices) {
			c = choices[step]
		}
		options = append(options, k)
		step++
		if c == len(ws) {
			clock.Lock()
			now = now.Add(2 * posting_lease)
			clock.Unlock()
			ticks++
			continue
		}
		s.mu.Lock()
		ch := s.waiting[ws[c]]
		delete(s.waiting, ws[c])
		s.mu.Unlock()
		close(ch)
	}
	// The queue runs every message again until the rows settle (the
	// clock past every lease).
	clock.Lock()
	now = now.Add(10 * posting_lease)
	clock.Unlock()
	for round := 0; round < 6; round++ {
		for _, m := range msgs {
			_ = r.p.Handle(ctx, m, 1)
		}
	}
	for _, m := range msgs {
		row, err := inner.GetPost(ctx, m.Delivery)
		if err != nil || !row.Status.Done() {
			return options, fmt.Sprintf("row %s (%s) ends %s: lost", m.Delivery, row.Phase, row.Status)
		}
	}
	count := map[string]int{}
	finishedAt, startedAt := -1, -1
	for i, p := range h.got {
		count[p.ID]++
		if p.Phase == channel.Finished && finishedAt < 0 {
			finishedAt = i
		}
		if p.Phase == channel.Started {
			startedAt = i
		}
		if !bytes.Equal(p.Body, h.got[0].Body) && p.ID == h.got[0].ID {
			return options, "one id, two bodies"
		}
	}
	if finishedAt < 0 {
		return options, "the finished post never reached the channel"
	}
	if !lookless {
		for id, n := range count {
			if n > 1 {
				return options, fmt.Sprintf("post %s created %d times on a channel that can be asked", id, n)
			}
		}
		if startedAt > finishedAt {
			return options, "a started post after the finished one: the status moved back"
		}
	}
	return options, ""
}

const posting_lease = 45 * time.Second

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func newMemPosts(now func() time.Time) store.Posts { return memPosts(now) }

// Every interleaving of a Started post, its copy and the Finished post,
// the first send's answer lost, the clock jumping past a lease anywhere.
// Rules: R-CHANNEL-1, R-CHANNEL-3, R-CHANNEL-6.
func TestPosting_Exhaustive_LostAnswerLapsedLease(t *testing.T) {
	for _, lookless := range []bool{false, true} {
		name := "asked"
		if lookless {
			name = "webhook"
		}
		t.Run(name, func(t *testing.T) {
			paths := 0
			var prefix []int
			for {
				options, broke := explorePath(t, lookless, prefix)
				paths++
				if broke != "" {
					t.Fatalf("path %v: %s", prefix, broke)
				}
				// The next path: the last decision with an option left.
				next := append([]int(nil), prefix...)
				for len(next) < len(options) {
					next = append(next, 0)
				}
				i := len(next) - 1
				for i >= 0 && next[i]+1 >= options[i] {
					i--
				}
				if i < 0 {
					break
				}
				next[i]++
				prefix = next[:i+1]
				if paths > 200000 {
					t.Fatal("too many paths")
				}
			}
			t.Logf("%s: %d paths, every one checked", name, paths)
		})
	}
}
