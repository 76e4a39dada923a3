package posting_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/posting"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// host is a channel that keeps what it was sent, can lose an answer
// after taking the post, and can be asked (Find) unless lookless.
type host struct {
	name     string
	lookless bool
	mu       sync.Mutex
	got      []channel.Post
	priors   []channel.Receipt
	loseNext int // answers to lose after taking the post
	failNext int // sends to refuse outright
}

func (h *host) Name() string { return h.name }

func (h *host) Find(_ context.Context, p channel.Post) (channel.Receipt, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lookless {
		return channel.Receipt{}, false, nil
	}
	for i, g := range h.got {
		if g.ID == p.ID {
			return channel.Receipt{Ref: fmt.Sprint("ref-", i)}, true, nil
		}
	}
	return channel.Receipt{}, false, nil
}

func (h *host) Send(_ context.Context, p channel.Post, prior channel.Receipt) (channel.Receipt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failNext > 0 {
		h.failNext--
		return channel.Receipt{}, retry.Transient(retry.Upstream5xx, errors.New("502"))
	}
	h.got = append(h.got, p)
	h.priors = append(h.priors, prior)
	if h.loseNext > 0 {
		h.loseNext--
		return channel.Receipt{}, retry.Transient(retry.NetworkError, errors.New("connection reset after the request"))
	}
	return channel.Receipt{Ref: fmt.Sprint("ref-", len(h.got)-1)}, nil
}

// Render makes the host a Renderer: the body stored once with the row.
func (h *host) Render(p channel.Post) ([]byte, error) {
	return json.Marshal(map[string]any{"id": p.ID, "title": p.Title, "counts": p.Counts, "findings": len(p.Findings)})
}

type jobs struct{ j job.Job }

func (s jobs) Get(context.Context, job.ID) (job.Job, error) { return s.j, nil }
func (s jobs) GetSourceRef(context.Context, job.ID) (store.SourceRef, error) {
	return store.SourceRef{HeadSHA: "c0ffee"}, nil
}

type queue struct{ msgs []job.Message }

func (q *queue) Enqueue(_ context.Context, m job.Message) error {
	q.msgs = append(q.msgs, m)
	return nil
}

type rig struct {
	p     *posting.Posting
	posts *memstore.Posts
	q     *queue
	now   time.Time
	j     job.Job
}

func newRig(t *testing.T, chans ...channel.Channel) *rig {
	t.Helper()
	c, _ := json.Marshal(critic.Critique{Summary: "two things", Findings: []critic.Finding{
		{File: "a.go", Line: 3, Severity: critic.SeverityError, Message: "see <https://evil.example|here> & @channel"},
		{File: "b.go", Line: 9, Severity: critic.SeverityInfo, Message: "nit"}}})
	r := &rig{q: &queue{}, now: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	r.j = job.Job{ID: "j_1", Source: job.SourceGitHub, ChangelistID: "acme/app#7", ReviewVersion: 2, Title: "Fix",
		Status: job.StatusSucceeded, Stage: job.StageDone, Critique: c}
	r.posts = memstore.NewPosts(func() time.Time { return r.now })
	r.p = &posting.Posting{Posts: r.posts, Jobs: jobs{r.j}, Queue: r.q, Channels: chans,
		Now: func() time.Time { return r.now }, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), JobLink: func(id job.ID) string { return "https://crit.example/jobs/" + string(id) }}
	return r
}

// handleAll runs every queued message once; it returns the errors.
func (r *rig) handleAll(t *testing.T) []error {
	t.Helper()
	var errs []error
	msgs := r.q.msgs
	r.q.msgs = nil
	for _, m := range msgs {
		if err := r.p.Handle(context.Background(), m, 1); err != nil {
			errs = append(errs, err)
			r.q.msgs = append(r.q.msgs, m) // the queue gives it back
		}
	}
	return errs
}

// A version's Started and Finished posts each reach the channel once;
// the Finished one carries what the Started one left (its receipt), the
// counts, the findings and the job's link.
// Rules: R-CHANNEL-1, R-CHANNEL-4.
func TestPosting_StartedThenFinished_OnePostEach(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "github-check"}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Started, "", ""); err != nil {
		t.Fatal(err)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(h.got) != 2 || h.got[0].Phase != channel.Started || h.got[1].Phase != channel.Finished {
		t.Fatalf("sent %+v, want started then finished", h.got)
	}
	fin := h.got[1]
	if h.priors[1].Ref != "ref-0" {
		t.Fatalf("finished post's prior = %+v, want the started post's receipt", h.priors[1])
	}
	if fin.Counts != (channel.Counts{Error: 1, Info: 1}) || len(fin.Findings) != 2 || fin.Head != "c0ffee" ||
		fin.JobURL != "https://crit.example/jobs/j_1" || fin.Outcome != channel.Reviewed || fin.VersionKey != h.got[0].VersionKey {
		t.Fatalf("finished post = %+v", fin)
	}
	if fin.ID == h.got[0].ID {
		t.Fatal("the phases share a post id")
	}
	// Announcing again (a stage's retry) sends nothing more.
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	r.handleAll(t)
	if len(h.got) != 2 {
		t.Fatalf("a second announce sent again: %d posts", len(h.got))
	}
}

// A send whose answer was lost after the channel took it: the next try
// asks the channel (Find) and marks the row sent without a second post.
// Rules: R-CHANNEL-3.
func TestPosting_LostAnswer_FoundNotResent(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "github-check", loseNext: 1}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	if errs := r.handleAll(t); len(errs) != 1 || retry.Classify(errs[0]).Class != retry.NetworkError {
		t.Fatalf("first try = %v, want the lost answer", errs)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(h.got) != 1 {
		t.Fatalf("%d posts on the channel, want 1", len(h.got))
	}
	row, err := r.posts.GetPost(ctx, h.got[0].ID)
	if err != nil || row.Status != channel.StatusSent || row.Receipt.Ref != "ref-0" || row.Attempts != 2 {
		t.Fatalf("row = %+v %v", row, err)
	}
}

// A channel that cannot be asked (a webhook) gets the post again after a
// lost answer: the same id and the same stored body (at least once).
// Rules: R-CHANNEL-2, R-CHANNEL-3.
func TestPosting_LostAnswer_LooklessResendsSameIDAndBody(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "webhook:chat", lookless: true, loseNext: 1}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	r.handleAll(t)
	// The job's title changes before the retry: the stored body stands.
	r.p.Jobs = jobs{job.Job{ID: "j_1", Title: "something else"}}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(h.got) != 2 || h.got[0].ID != h.got[1].ID || !bytes.Equal(h.got[0].Body, h.got[1].Body) || len(h.got[0].Body) == 0 {
		t.Fatalf("sends = %d, ids %q/%q, bodies equal %v", len(h.got), h.got[0].ID, h.got[1].ID, bytes.Equal(h.got[0].Body, h.got[1].Body))
	}
}

// A Finished post handled before its Started one: the Started row is
// settled unsent, and stays so when its own message comes; the code host
// sees one post, never a status moved back to in progress.
// Rules: R-CHANNEL-6.
func TestPosting_FinishedFirst_StartedNeverSent(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "github-check"}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Started, "", ""); err != nil {
		t.Fatal(err)
	}
	started := r.q.msgs
	r.q.msgs = nil
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	r.q.msgs = started
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(h.got) != 1 || h.got[0].Phase != channel.Finished {
		t.Fatalf("sent %+v, want the finished post only", h.got)
	}
	row, _ := r.posts.GetPost(ctx, started[0].Delivery)
	if row.Status != channel.StatusSettled {
		t.Fatalf("started row = %s, want settled", row.Status)
	}
}

// A Started post being sent under a live lease holds its Finished post
// back (retried, IN_FLIGHT); once the lease lapses the Finished post
// reconciles it and goes.
// Rules: R-CHANNEL-6.
func TestPosting_FinishedWaitsForStartedInFlight(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "github-check"}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Started, "", ""); err != nil {
		t.Fatal(err)
	}
	sid := r.q.msgs[0].Delivery
	r.q.msgs = nil
	if _, err := r.posts.ClaimPost(ctx, sid, "dead-invocation", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	errs := r.handleAll(t)
	if len(errs) != 1 || retry.Classify(errs[0]).Class != retry.InFlight {
		t.Fatalf("finished under a live started lease = %v, want IN_FLIGHT", errs)
	}
	r.now = r.now.Add(2 * time.Minute)
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(h.got) != 1 || h.got[0].Phase != channel.Finished {
		t.Fatalf("sent %+v, want the finished post only", h.got)
	}
	if row, _ := r.posts.GetPost(ctx, sid); row.Status != channel.StatusSettled {
		t.Fatalf("started row = %s, want settled", row.Status)
	}
}

// A channel that keeps failing: each try releases the row with its class,
// the failure is the message's (the runner retries and dead-letters it),
// and the sweeper hands back a row whose message was lost.
// Rules: R-CHANNEL-5.
func TestPosting_FailingChannel_ReleasedAndSwept(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "webhook:down", lookless: true, failNext: 100}
	r := newRig(t, h)
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	id := r.q.msgs[0].Delivery
	for i := 0; i < 2; i++ {
		if errs := r.handleAll(t); len(errs) != 1 || retry.Classify(errs[0]).Class != retry.Upstream5xx {
			t.Fatalf("try %d = %v", i, errs)
		}
	}
	row, _ := r.posts.GetPost(ctx, id)
	if row.Status != channel.StatusPending || row.LastErrorClass != "UPSTREAM_5XX" || row.Attempts != 2 {
		t.Fatalf("row = %+v", row)
	}
	r.q.msgs = nil // the message is gone (dead-lettered, or lost)
	if n, err := r.p.Sweep(ctx, r.now, time.Minute); err != nil || n != 0 {
		t.Fatalf("sweep of a fresh row = %d %v, want 0", n, err)
	}
	r.now = r.now.Add(5 * time.Minute)
	if n, err := r.p.Sweep(ctx, r.now, time.Minute); err != nil || n != 1 || r.q.msgs[0].Delivery != id || r.q.msgs[0].Task != job.TaskPost {
		t.Fatalf("sweep = %d %v %+v", n, err, r.q.msgs)
	}
	// Tried as often as the budget allows: left to its envelope.
	r.handleAll(t)
	r.handleAll(t)
	r.handleAll(t)
	r.q.msgs = nil
	r.now = r.now.Add(5 * time.Minute)
	if n, err := r.p.Sweep(ctx, r.now, time.Minute); err != nil || n != 0 {
		t.Fatalf("sweep of a row past its budget = %d %v, want 0", n, err)
	}
}

// What a job's final state says of its version.
// Rules: R-CHANNEL-4.
func TestOutcomeOf(t *testing.T) {
	for _, c := range []struct {
		j    job.Job
		want channel.Outcome
		ok   bool
	}{
		{job.Job{Status: job.StatusSucceeded}, channel.Reviewed, true},
		{job.Job{Status: job.StatusNeedsIntervention}, channel.Reviewed, true},
		{job.Job{Status: job.StatusSucceeded, Skipped: "author"}, channel.Skipped, true},
		{job.Job{Status: job.StatusBudgetExceeded}, channel.Skipped, true},
		{job.Job{Status: job.StatusDeadLettered}, channel.NotReviewed, true},
		{job.Job{Status: job.StatusInProgress}, "", false},
	} {
		got, _, ok := posting.OutcomeOf(c.j)
		if got != c.want || ok != c.ok {
			t.Errorf("%+v → %s %v, want %s %v", c.j.Status, got, ok, c.want, c.ok)
		}
	}
}

// An outsider's diff cannot make a post unbounded: at most 50 findings
// (counted in full), each text cut.
// Rules: R-CHANNEL-7.
func TestPosting_FindingsBounded(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "webhook:chat", lookless: true}
	r := newRig(t, h)
	var c critic.Critique
	for i := 0; i < posting.DefaultMaxFindings+10; i++ {
		c.Findings = append(c.Findings, critic.Finding{File: "a.go", Line: i + 1, Severity: critic.SeverityWarning,
			Message: string(bytes.Repeat([]byte("é"), 3000))})
	}
	r.j.Critique, _ = json.Marshal(c)
	r.p.Jobs = jobs{r.j}
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	p := h.got[0]
	if len(p.Findings) != posting.DefaultMaxFindings || p.Counts.Warning != posting.DefaultMaxFindings+10 {
		t.Fatalf("%d findings, counts %+v", len(p.Findings), p.Counts)
	}
	if m := p.Findings[0].Message; len(m) > posting.MaxFindingText+len("…") {
		t.Fatalf("finding text of %d bytes", len(m))
	}
}

// A stage's announcement (a post task without a row) makes the rows and a
// task per row; a Finished one before the job's final status waits,
// without spending the budget.
// Rules: R-CHANNEL-4.
func TestPosting_AnnouncementFansOut(t *testing.T) {
	ctx := context.Background()
	a, b := &host{name: "webhook:a", lookless: true}, &host{name: "github-check"}
	r := newRig(t, a, b)
	r.j.Status = job.StatusInProgress
	r.p.Jobs = jobs{r.j}
	err := r.p.Handle(ctx, job.Message{JobID: "j_1", Task: job.TaskPost, Phase: string(channel.Finished)}, 1)
	if c := retry.Classify(err).Class; c != retry.AwaitingEvidence {
		t.Fatalf("finished before the job's end = %v, want a wait", err)
	}
	if err := r.p.Handle(ctx, job.Message{JobID: "j_1", Task: job.TaskPost, Phase: string(channel.Started)}, 1); err != nil {
		t.Fatal(err)
	}
	if len(r.q.msgs) != 2 || r.q.msgs[0].Delivery == "" || r.q.msgs[0].Delivery == r.q.msgs[1].Delivery {
		t.Fatalf("fan-out = %+v", r.q.msgs)
	}
	if errs := r.handleAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(a.got) != 1 || len(b.got) != 1 || a.got[0].VersionKey != b.got[0].VersionKey || a.got[0].ID == b.got[0].ID {
		t.Fatalf("posts: %+v / %+v", a.got, b.got)
	}
}

func memPosts(now func() time.Time) store.Posts { return memstore.NewPosts(now) }

// Posts are counted per channel: sent, resent, failed, and dead-lettered
// when the failure is the stage's last try (not retryable, or the
// budget spent); the dimension is the channel's name.
// Rules: R-CHANNEL-7.
func TestPosting_MetricsPerChannel(t *testing.T) {
	ctx := context.Background()
	h := &host{name: "webhook:down", lookless: true, failNext: 100}
	r := newRig(t, h)
	var logs bytes.Buffer
	r.p.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	if err := r.p.Announce(ctx, r.j, channel.Finished, channel.Reviewed, ""); err != nil {
		t.Fatal(err)
	}
	m := r.q.msgs[0]
	for attempt := 1; attempt <= 5; attempt++ {
		if err := r.p.Handle(ctx, m, attempt); err == nil {
			t.Fatal("the failing channel took the post")
		}
		if n := bytes.Count(logs.Bytes(), []byte(`"PostsDeadLettered":1`)); (attempt < 5 && n != 0) || (attempt == 5 && n != 1) {
			t.Fatalf("attempt %d: %d PostsDeadLettered metrics", attempt, n)
		}
	}
	for _, want := range []string{`"PostsFailed":1`, `"PostsResent":1`, `"Channel":"webhook:down"`} {
		if !bytes.Contains(logs.Bytes(), []byte(want)) {
			t.Errorf("no %s in the metrics", want)
		}
	}
}
