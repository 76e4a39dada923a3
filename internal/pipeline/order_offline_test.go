package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

func commit(n int) string { return fmt.Sprintf("%040d", n) }

// historySource is a code host whose heads have parents (0 for a root):
// it orders two heads as GitHub's compare API does, and says what it was
// asked.
type historySource struct {
	parents map[int]int
	mu      sync.Mutex
	asked   []string // "head<-other" per Standing, "fetch head" per Fetch
}

func (s *historySource) ancestry(sha string) []string {
	var out []string
	for n := 0; ; {
		if _, err := fmt.Sscanf(sha, "%d", &n); err != nil || n == 0 {
			return out
		}
		out = append(out, sha)
		sha = commit(s.parents[n])
	}
}

func (s *historySource) Standing(_ context.Context, ref source.Ref, other string) (source.Standing, error) {
	s.mu.Lock()
	s.asked = append(s.asked, strings.TrimLeft(ref.HeadSHA, "0")+"<-"+strings.TrimLeft(other, "0"))
	s.mu.Unlock()
	switch {
	case ref.HeadSHA == other:
		return source.Identical, nil
	case slices.Contains(s.ancestry(ref.HeadSHA), other):
		return source.Ahead, nil
	case slices.Contains(s.ancestry(other), ref.HeadSHA):
		return source.Behind, nil
	}
	return source.Diverged, nil
}

func (s *historySource) Fetch(_ context.Context, ref source.Ref) (source.Changelist, error) {
	s.mu.Lock()
	s.asked = append(s.asked, "fetch "+strings.TrimLeft(ref.HeadSHA, "0"))
	s.mu.Unlock()
	return source.Changelist{BaseSHA: "ba5e", Diff: settingsDiff, Reviewers: source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}}}}, nil
}

func (s *historySource) Reviewers(context.Context, source.Ref) (source.Reviewers, error) {
	return source.Reviewers{}, nil
}

func (s *historySource) took() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.asked
	s.asked = nil
	return out
}

// orderRig places heads of acme/app#7 and runs their versions' fetch.
type orderRig struct {
	t     *testing.T
	jobs  *memstore.Jobs
	src   *historySource
	fetch *pipeline.Fetch
}

func newOrderRig(t *testing.T, parents map[int]int) *orderRig {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	jobs := memstore.NewJobs(nil)
	src := &historySource{parents: parents}
	base := pipeline.Base{Jobs: jobs, Blobs: &memBlobs{}, Queue: nopQueue{}, Log: log, Now: time.Now}
	return &orderRig{t: t, jobs: jobs, src: src, fetch: &pipeline.Fetch{Base: base, Source: src, Heads: jobs}}
}

// place places head n (its event naming before, 0 for none) and creates
// its version's job; it returns the version.
func (r *orderRig) place(n, before int) int {
	r.t.Helper()
	ctx := context.Background()
	ev := store.HeadEvent{Source: "github", ChangelistID: "acme/app#7", HeadSHA: commit(n)}
	if before > 0 {
		ev.BeforeSHA = commit(before)
	}
	p, err := r.jobs.PlaceHead(ctx, ev)
	if err != nil || p.Stale {
		r.t.Fatalf("place %d: %+v %v", n, p, err)
	}
	r.version(p.Version, n)
	return p.Version
}

// version creates job v of head n.
func (r *orderRig) version(v, n int) {
	r.t.Helper()
	now := time.Now().UTC()
	j := job.Job{ID: job.NewID("github", "acme/app#7", v), Source: "github", ChangelistID: "acme/app#7", ReviewVersion: v,
		Title: "Change", URL: "https://github.example/acme/app/pull/7", Author: "carol", Recipients: []string{},
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	r.jobs.Put(j)
	if err := r.jobs.PutSourceRef(context.Background(), j.ID, store.SourceRef{Source: "github", Repo: "acme/app", Number: 7, HeadSHA: commit(n)}); err != nil {
		r.t.Fatal(err)
	}
}

// run fetches version v and returns its job and what the host was asked.
func (r *orderRig) run(v int) (job.Job, []string) {
	r.t.Helper()
	ctx := context.Background()
	id := job.NewID("github", "acme/app#7", v)
	if err := r.fetch.Handle(ctx, job.Message{JobID: id, Stage: job.StageFetch}, 1); err != nil {
		r.t.Fatalf("fetch v%d: %v", v, err)
	}
	j, err := r.jobs.Get(ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j, r.src.took()
}

func (r *orderRig) order(n int) store.HeadOrder {
	h, err := r.jobs.Head(context.Background(), "github", "acme/app#7", commit(n))
	if err != nil {
		r.t.Fatal(err)
	}
	return h.Order
}

// The fetch stage settles a pending head with the host before anything
// is reviewed (R-SOURCE-6): compared with the version before it, and
// while that one is pending too, the ones before that, passing over heads
// found behind. A head behind one of them is skipped — nothing fetched,
// nobody to mail — and the verdict is kept, so a retry asks nothing
// again; a head in order is fetched. A head in order from the start, and
// a rerun of a head, are not compared.
// Rules: R-SOURCE-6.
func TestFetch_PendingHeadOrderedByTheHost_BehindIsSkipped(t *testing.T) {
	// 1 ← 2 ← 3 ← 4 ← 5 ← 6, and 8 ← 9 rewrote the branch after 3.
	r := newOrderRig(t, map[int]int{1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 8: 3, 9: 8})

	r.place(1, 0) // v1, in order: not compared
	if j, asked := r.run(1); j.Skipped != "" || !slices.Equal(asked, []string{"fetch 1"}) {
		t.Fatalf("v1: skipped %q, asked %v; want fetched, nothing compared", j.Skipped, asked)
	}
	// 3, whose before (2) is unknown: pending, ahead of 1.
	r.place(3, 2)
	if j, asked := r.run(2); j.Skipped != "" || !slices.Equal(asked, []string{"3<-1", "fetch 3"}) || r.order(3) != store.HeadOrdered {
		t.Fatalf("v2 (3): skipped %q, asked %v, order %s; want compared with 1, in order, fetched", j.Skipped, asked, r.order(3))
	}
	// 6 (before 5, unknown), then 4 (before 3, not the newest) and 5's
	// own event stale (6 named it): 4 is behind 6.
	r.place(6, 5)
	r.place(4, 3)
	j, asked := r.run(4)
	if !strings.Contains(j.Skipped, "behind version 3") || len(j.Recipients) != 0 || !slices.Equal(asked, []string{"4<-6"}) || r.order(4) != store.HeadBehind {
		t.Fatalf("v4 (4): skipped %q, recipients %v, asked %v, order %s; want behind v3, skipped, nothing fetched",
			j.Skipped, j.Recipients, asked, r.order(4))
	}
	// 6's fetch, after 4's: compared with 3 only.
	if j, asked := r.run(3); j.Skipped != "" || !slices.Equal(asked, []string{"6<-3", "fetch 6"}) {
		t.Fatalf("v3 (6): skipped %q, asked %v; want compared with 3, fetched", j.Skipped, asked)
	}
	// A retry of 4's fetch (the job back at fetch): the verdict stands,
	// nothing asked.
	r.version(4, 4)
	if j, asked := r.run(4); j.Skipped == "" || len(asked) != 0 {
		t.Fatalf("v4 again: skipped %q, asked %v; want skipped, nothing asked", j.Skipped, asked)
	}
	// 9 (before 8, unknown; a rewrite after 3): pending after 4, which is
	// behind: passed over; diverged from 6: in order, fetched.
	r.place(9, 8)
	if j, asked := r.run(5); j.Skipped != "" || !slices.Equal(asked, []string{"9<-6", "fetch 9"}) {
		t.Fatalf("v5 (9): skipped %q, asked %v; want compared with 6 only (4 passed over), fetched", j.Skipped, asked)
	}
	// A rerun of 9 (an explicit version of its own): not compared.
	r.version(6, 9)
	if j, asked := r.run(6); j.Skipped != "" || !slices.Equal(asked, []string{"fetch 9"}) {
		t.Fatalf("rerun of 9: skipped %q, asked %v; want fetched, nothing compared", j.Skipped, asked)
	}
}

// A pending head after pending ones: ahead of the one before it, still
// pending, it is compared with the one before that, down to one in
// order, and behind that one it is skipped.
// Rules: R-SOURCE-6.
func TestFetch_PendingHeadComparedDownToOneInOrder(t *testing.T) {
	// 1 ← 2 ← 3 ← 4 ← 5 ← 6: 6 versioned first, then 3 and 4 late, each
	// event naming a head nothing knows.
	r := newOrderRig(t, map[int]int{1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5})
	r.place(1, 0)
	r.run(1)
	r.place(6, 0) // v2, pending
	r.run(2)      // in order: ahead of 1
	r.place(3, 0) // v3, pending after 6
	r.place(4, 3) // v4, follows 3 (pending): pending
	j, asked := r.run(4)
	if j.Skipped == "" || !slices.Equal(asked, []string{"4<-3", "4<-6"}) {
		t.Fatalf("v4 (4): skipped %q, asked %v; want compared with 3 (pending), then 6: behind, skipped", j.Skipped, asked)
	}
	if j, asked := r.run(3); j.Skipped == "" || !slices.Equal(asked, []string{"3<-6"}) {
		t.Fatalf("v3 (3): skipped %q, asked %v; want behind 6", j.Skipped, asked)
	}
}
