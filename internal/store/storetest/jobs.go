package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// NewJob is a job accepted at fetch.
func NewJob(cl string, version int) job.Job {
	now := time.Now().UTC()
	return job.Job{ID: job.NewID("generic", cl, version), Source: "generic", ChangelistID: cl, ReviewVersion: version,
		Title: "t", URL: "https://x.example/1", Author: "a", Recipients: []string{"r@example.com"},
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
}

// Creator is the part of a jobs table that creates jobs.
type Creator interface {
	Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error)
}

// Create creates j, failing the test on an error.
func Create(t *testing.T, s Creator, j job.Job, key, bodySHA string) store.CreateResult {
	t.Helper()
	res, err := s.Create(context.Background(), store.CreateRequest{Job: j, IdempotencyKeySHA: key, RequestSHA256: bodySHA,
		ResponseStatus: 202, ResponseBody: []byte(`{"job_id":"` + string(j.ID) + `"}`), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// JobsOpener opens an empty jobs table for one test.
type JobsOpener func(t *testing.T, now store.Clock) store.Jobs

// Jobs runs the jobs table's suite against the stores open returns.
func Jobs(t *testing.T, open JobsOpener) {
	// R-INTAKE-1: "If an insert violates that unique constraint, the service
	// MUST treat it as a duplicate request and return the existing job instead
	// of creating a second job."
	t.Run("Create_DuplicateKeyReturnsOriginalResponse", func(t *testing.T) {
		s := open(t, nil)
		j := NewJob("cl-1", 1)
		if got := Create(t, s, j, "k1", "b1"); got.Outcome != store.Created {
			t.Fatalf("first create: outcome %v", got.Outcome)
		}
		got := Create(t, s, j, "k1", "b1")
		if got.Outcome != store.Replayed || got.ResponseStatus != 202 || string(got.ResponseBody) != `{"job_id":"`+string(j.ID)+`"}` {
			t.Fatalf("duplicate: %+v", got)
		}
		if got.Job.ID != j.ID || got.Job.Status != job.StatusAccepted {
			t.Fatalf("duplicate did not return the original job: %+v", got.Job)
		}
	})

	// R-INTAKE-1: "idempotency_key MUST be unique for job creation
	// requests" — the same key with another request is refused (HTTP 422).
	// Rules: R-INTAKE-2.
	t.Run("Create_SameKeyDifferentRequestRefused", func(t *testing.T) {
		s := open(t, nil)
		Create(t, s, NewJob("cl-1", 1), "k1", "b1")
		if got := Create(t, s, NewJob("cl-1", 2), "k1", "b2"); got.Outcome != store.KeyReused {
			t.Fatalf("outcome %v, want KeyReused", got.Outcome)
		}
		if _, err := s.Get(context.Background(), job.NewID("generic", "cl-1", 2)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused request created a job: %v", err)
		}
	})

	// A version someone asked for by number keeps saying so: notify mails
	// every recipient of it (R-RERUN-2); a version without the mark is
	// quiet, as every job stored before the mark existed.
	// Rules: R-RERUN-2.
	t.Run("Create_KeepsExplicit", func(t *testing.T) {
		s := open(t, nil)
		ctx := context.Background()
		explicit, quiet := NewJob("cl-explicit", 1), NewJob("cl-explicit", 2)
		explicit.Explicit = true
		Create(t, s, explicit, "k1", "b1")
		Create(t, s, quiet, "k2", "b2")
		if got, err := s.Get(ctx, explicit.ID); err != nil || !got.Explicit || got.Quiet() {
			t.Errorf("explicit version read back: explicit %t, quiet %t (%v)", got.Explicit, got.Quiet(), err)
		}
		if got, err := s.Get(ctx, quiet.ID); err != nil || got.Explicit || !got.Quiet() {
			t.Errorf("quiet version read back: explicit %t, quiet %t (%v)", got.Explicit, got.Quiet(), err)
		}
	})

	// R-INTAKE-3: reprocessing is "Blocked when the request uses the same
	// review_version (no-op; return existing result)".
	t.Run("Create_SameVersionOtherKeyReturnsExistingJob", func(t *testing.T) {
		s := open(t, nil)
		j := NewJob("cl-1", 3)
		Create(t, s, j, "k1", "b1")
		got := Create(t, s, j, "k2", "b2")
		if got.Outcome != store.VersionExists || got.Job.ID != j.ID {
			t.Fatalf("outcome %v job %s, want VersionExists %s", got.Outcome, got.Job.ID, j.ID)
		}
	})

	// R-INTAKE-3 and R-RERUN-1: only a strictly higher review_version starts a
	// new logical attempt; a lower one after a higher one is stale.
	t.Run("Create_HigherVersionStarts_LowerIsStale", func(t *testing.T) {
		s := open(t, nil)
		Create(t, s, NewJob("cl-1", 3), "k3", "b3")
		if got := Create(t, s, NewJob("cl-1", 4), "k4", "b4"); got.Outcome != store.Created {
			t.Fatalf("v4 after v3: outcome %v, want Created", got.Outcome)
		}
		got := Create(t, s, NewJob("cl-1", 2), "k2", "b2")
		if got.Outcome != store.Stale || got.CurrentVersion != 4 {
			t.Fatalf("v2 after v4: %+v, want Stale with current 4", got)
		}
		v, id, err := s.LatestVersion(context.Background(), "generic", "cl-1")
		if err != nil || v != 4 || id != job.NewID("generic", "cl-1", 4) {
			t.Fatalf("head: %d %s %v", v, id, err)
		}
	})

	// The changelist's first accepted version names its conversation: a
	// later version with another title, a stale one and KeepThreadTitle
	// leave it. A changelist with no head has no title, and none is
	// kept for it.
	// Rules: R-THREAD-1.
	t.Run("ThreadTitle_TheFirstVersionsTitleStays", func(t *testing.T) {
		ctx := context.Background()
		s := open(t, nil)
		if got, err := s.ThreadTitle(ctx, "generic", "cl-1"); err != nil || got != "" {
			t.Fatalf("no head yet: %q, %v; want none", got, err)
		}
		if _, err := s.KeepThreadTitle(ctx, "generic", "cl-1", "A"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("keep without a head: %v, want ErrNotFound", err)
		}
		titled := func(v int, title string) job.Job { j := NewJob("cl-1", v); j.Title = title; return j }
		Create(t, s, titled(2, "Add refunds"), "k2", "b2")
		Create(t, s, titled(3, "Add refunds & credits"), "k3", "b3")
		if got := Create(t, s, titled(1, "Stale"), "k1", "b1"); got.Outcome != store.Stale {
			t.Fatalf("v1 after v3: %v, want Stale", got.Outcome)
		}
		if got, err := s.ThreadTitle(ctx, "generic", "cl-1"); err != nil || got != "Add refunds" {
			t.Fatalf("thread title %q, %v; want the first version's %q", got, err, "Add refunds")
		}
		if got, err := s.KeepThreadTitle(ctx, "generic", "cl-1", "Other"); err != nil || got != "Add refunds" {
			t.Fatalf("keep over a kept title: %q, %v; want %q", got, err, "Add refunds")
		}
		if got, _ := s.ThreadTitle(ctx, "gitlab", "cl-1"); got != "" {
			t.Fatalf("another source's changelist has the title %q", got)
		}
	})

	// Concurrent first requests, for the same key or for the same version under
	// different keys, create exactly one job; every other caller gets it back.
	t.Run("Create_ConcurrentFirstRequests_ExactlyOneJob", func(t *testing.T) {
		s := open(t, nil)
		for _, sameKey := range []bool{true, false} {
			t.Run(fmt.Sprintf("sameKey=%v", sameKey), func(t *testing.T) {
				j := NewJob(fmt.Sprintf("race-%v", sameKey), 1)
				const n = 16
				outcomes := make([]store.Outcome, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						key := "k"
						if !sameKey {
							key = fmt.Sprintf("k%d", i)
						}
						res, err := s.Create(context.Background(), store.CreateRequest{Job: j, IdempotencyKeySHA: key, RequestSHA256: "b",
							ResponseStatus: 202, ResponseBody: []byte("{}"), TTL: time.Hour})
						if err != nil {
							t.Error(err)
							return
						}
						outcomes[i] = res.Outcome
					}()
				}
				wg.Wait()
				created := 0
				for _, o := range outcomes {
					switch o {
					case store.Created:
						created++
					case store.Replayed, store.VersionExists:
					default:
						t.Errorf("unexpected outcome %v", o)
					}
				}
				if created != 1 {
					t.Fatalf("%d creates succeeded, want exactly 1 (outcomes %v)", created, outcomes)
				}
			})
		}
	})

	// Reopen takes a finished job back to notify; Intervene marks a job at
	// notify or done needs_intervention, never a dead-lettered one;
	// StuckJobs yields unfinished jobs not updated since the bound.
	t.Run("Reopen_Intervene_StuckJobs", func(t *testing.T) {
		now := time.Now().UTC()
		s := open(t, func() time.Time { return now })
		ctx := context.Background()
		cl := fmt.Sprintf("cl-%d", now.UnixNano())
		fresh := NewJob(cl, 1)
		Create(t, s, fresh, "k1-"+cl, "b1")
		if err := s.Reopen(ctx, fresh.ID); !errors.Is(err, store.ErrConflict) {
			t.Errorf("reopen of a job at fetch: %v, want ErrConflict", err)
		}
		if err := s.Intervene(ctx, fresh.ID); !errors.Is(err, store.ErrConflict) {
			t.Errorf("intervene on a job at fetch: %v, want ErrConflict", err)
		}
		found := false
		if err := s.StuckJobs(ctx, now.Add(time.Minute), func(j job.Job) error {
			found = found || j.ID == fresh.ID
			return nil
		}); err != nil || !found {
			t.Errorf("stuck jobs: %v, found %v", err, found)
		}
		found = false
		_ = s.StuckJobs(ctx, now.Add(-time.Minute), func(j job.Job) error {
			found = found || j.ID == fresh.ID
			return nil
		})
		if found {
			t.Error("a job updated after the bound is not stuck")
		}
		if err := s.Reopen(ctx, "j_missing"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("reopen of no job: %v, want ErrConflict", err)
		}
	})

	// The commit a version's repository files are read at is pinned the
	// first time the fetch stage finds it: a later attempt that found
	// another (the destination branch moved on) reads the first; a base
	// the webhook named is never replaced; a job without a source
	// reference has nothing to pin.
	// Rules: R-SOURCE-5, R-REPO-6.
	t.Run("PinBase_TheFirstPinStays", func(t *testing.T) {
		s := open(t, nil)
		ctx := context.Background()
		const first, later, named = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222",
			"3333333333333333333333333333333333333333"
		id := job.NewID("gerrit", fmt.Sprintf("p~%d", time.Now().UnixNano()), 1)
		if _, err := s.PinBase(ctx, id, first); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("pin without a source reference: %v, want ErrNotFound", err)
		}
		if err := s.PutSourceRef(ctx, id, store.SourceRef{Source: "gerrit", Repo: "p", Number: 1, Patchset: 1}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.PinBase(ctx, id, first); err != nil || got != first {
			t.Fatalf("first pin: %q %v, want %q", got, err, first)
		}
		if got, err := s.PinBase(ctx, id, later); err != nil || got != first {
			t.Fatalf("a later pin: %q %v, want the first, %q", got, err, first)
		}
		if got, err := s.PinBase(ctx, id, first); err != nil || got != first {
			t.Fatalf("the same pin again (a retried write): %q %v", got, err)
		}
		withBase := job.NewID("github", fmt.Sprintf("o/r#%d", time.Now().UnixNano()), 1)
		if err := s.PutSourceRef(ctx, withBase, store.SourceRef{Source: "github", Repo: "o/r", Number: 1, BaseSHA: named}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.PinBase(ctx, withBase, later); err != nil || got != named {
			t.Fatalf("pin over the webhook's base: %q %v, want the webhook's %q", got, err, named)
		}
	})

	// A version placed in its code host's order is created below the
	// changelist's head, the head left where it is; one that was not is
	// stale there (R-INTAKE-3).
	// Rules: R-SOURCE-6.
	t.Run("Create_PlacedVersionBelowTheHead", func(t *testing.T) { placedBelowHead(t, open(t, nil)) })

	// The stages' fenced writes: each condition refusing.
	stageFence(t, open)

	// What fetch writes, read back as written (JobWrite).
	t.Run("Advance_WritesEveryResultAsTyped", func(t *testing.T) { jobWrite(t, open(t, nil)) })

	// The head commits, ordered as their code host orders them.
	Heads(t, func(t *testing.T) store.Heads { return open(t, nil) })

	// The versions of each diff content.
	t.Run("SameDiff_VersionsPerContent", func(t *testing.T) { sameDiff(t, open(t, nil)) })
}

// EvidenceOpener opens an empty evidence path for one test.
type EvidenceOpener func(t *testing.T, now store.Clock) store.Evidence

// Evidence runs the evidence path's suite.
func Evidence(t *testing.T, open EvidenceOpener) {
	// The newest event time and the drain time move forward only, each on
	// its own, per configuration set; probes are claimed once per need.
	// Rules: R-EVIDENCE-2, R-EVIDENCE-3.
	t.Run("Evidence_ForwardOnlyPerSet", func(t *testing.T) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		e := open(t, func() time.Time { return now })
		ctx := context.Background()
		if st, err := e.State(ctx, "set"); err != nil || !st.Newest.IsZero() || !st.Drained.IsZero() {
			t.Fatalf("no event yet: %+v %v", st, err)
		}
		t1, t2 := now.Add(-time.Minute), now.Add(-30*time.Second)
		if err := e.Advance(ctx, "set", t2); err != nil {
			t.Fatal(err)
		}
		if err := e.Advance(ctx, "set", t1); err != nil { // an older event, later
			t.Fatal(err)
		}
		if st, _ := e.State(ctx, "set"); !st.Newest.Equal(t2) || !st.Drained.IsZero() {
			t.Fatalf("state %+v, want newest %v (forward only), not drained", st, t2)
		}
		if err := e.Drain(ctx, "set", t2); err != nil {
			t.Fatal(err)
		}
		if err := e.Drain(ctx, "set", t1); err != nil { // an older observation, later
			t.Fatal(err)
		}
		if st, _ := e.State(ctx, "set"); !st.Drained.Equal(t2) || !st.Newest.Equal(t2) {
			t.Fatalf("state %+v, want drained %v (forward only)", st, t2)
		}
		if st, _ := e.State(ctx, "other-set"); !st.Newest.IsZero() || !st.Drained.IsZero() {
			t.Fatal("configuration sets share an evidence path")
		}
		// One probe per need (a notifier probes once now is past need);
		// another once the last is older than every.
		need := now.Add(-time.Second)
		if ok, err := e.ClaimProbe(ctx, "set", need, time.Minute); err != nil || !ok {
			t.Fatalf("first probe: %v %v", ok, err)
		}
		if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
			t.Fatal("a second probe for the same need")
		}
		now = now.Add(2 * time.Minute)
		if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); !ok {
			t.Fatal("no new probe after the last one's events never came")
		}
		if err := e.Advance(ctx, "set", need); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Minute)
		if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
			t.Fatal("a probe although the newest event is past need")
		}
	})

	// A run of clear readings of the feedback queue begins at its first
	// clear reading and goes on while readings come at most twice the
	// schedule apart; one reading that is not clear is tolerated, such
	// readings for the schedule or longer end it, and so does one after a
	// gap; an older reading can only end it.
	// Rules: R-EVIDENCE-2.
	t.Run("Evidence_RunOfClearReadings", func(t *testing.T) {
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		e := open(t, func() time.Time { return t0 })
		ctx := context.Background()
		const every = time.Minute
		observe := func(at time.Time, clear bool, want time.Time) {
			t.Helper()
			r := store.ReadingClear
			if !clear {
				r = store.ReadingVisible
			}
			got, err := e.Observe(ctx, "set", at, r, every)
			if err != nil || !got.Equal(want) {
				t.Fatalf("Observe(%v, clear %v) = %v, %v; want %v", at.Sub(t0), clear, got.Sub(t0), err, want.Sub(t0))
			}
		}
		m := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
		observe(m(0), true, m(0))
		observe(m(1), true, m(0))
		observe(m(3), true, m(0))
		observe(m(2), true, m(0))  // older than the last: nothing added
		observe(m(6), true, m(6))  // more than twice the schedule after the last: a new run
		observe(m(7), false, m(6)) // one reading that is not clear: tolerated
		observe(m(8), true, m(6))
		observe(m(9), false, m(6))
		observe(m(10), false, time.Time{}) // two in a row, a schedule apart: the run ends
		observe(m(11), true, m(11))
		observe(m(5), false, time.Time{}) // a late reading that was not clear still ends the run
		observe(m(12), true, m(12))
		if got, _ := e.Observe(ctx, "set", m(13), store.ReadingDeadLettered, every); !got.IsZero() {
			t.Fatalf("a dead letter left the run from %v", got)
		}
		observe(m(14), true, m(14))
		if st, err := e.State(ctx, "set"); err != nil || !st.ClearSince.Equal(m(14)) || !st.ReadAt.Equal(m(14)) || !st.DirtySince.IsZero() {
			t.Fatalf("state %+v %v", st, err)
		}
		if got, _ := e.Observe(ctx, "other-set", m(14), store.ReadingClear, every); !got.Equal(m(14)) {
			t.Fatal("configuration sets share a run")
		}
	})
}
