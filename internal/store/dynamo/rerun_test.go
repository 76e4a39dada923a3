package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// R-RERUN-1: "Reprocessing is allowed as a versioned rerun only with a
// new review_version (e.g., v3 -> v4), which creates new delivery intents
// under new keys." A rerun of a generic changelist at v3 is a new job at v4
// copying v3's title, url, author, repository, recipients and stored diff, and the
// changelist head moves to v4 (so a webhook for v2 is now stale). The
// rerun is explicit: an operator asked for it (R-RERUN-2).
// Rules: R-INTAKE-7.
func TestRerun_CopiesLatestAsNextVersion_HeadMoves(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	cl := testenv.Prefix(t)
	v3 := storetest.NewJob(cl, 3)
	v3.Recipients = []string{"ann@example.com", "bo@example.com"}
	v3.DiffRef, v3.DiffSHA256, v3.Repository = "diffs/abc", "abc", "acme/billing"
	storetest.Create(t, s, v3, "k3", "b3")

	plan, err := s.PlanRerun(ctx, "generic", cl)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Latest.ID != v3.ID || plan.NextVersion != 4 || plan.SourceRef != nil || len(plan.NoEmailReviewers) != 0 {
		t.Fatalf("plan %+v, want latest v3, next 4, no source reference", plan)
	}
	j, err := s.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: "INC-7: template fixed"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != job.NewID("generic", cl, 4) || got.ReviewVersion != 4 || got.Status != job.StatusAccepted || got.Stage != job.StageFetch ||
		got.Title != v3.Title || got.URL != v3.URL || got.Author != v3.Author || !slices.Equal(got.Recipients, v3.Recipients) ||
		got.DiffRef != v3.DiffRef || got.DiffSHA256 != v3.DiffSHA256 || got.Repository != "acme/billing" || len(got.Critique) != 0 {
		t.Fatalf("rerun job %+v, want a fresh copy of v3 at version 4", got)
	}
	// An operator asked for it: every recipient is mailed (R-RERUN-2).
	if !got.Explicit || got.RerunOf != v3.ID || got.Quiet() {
		t.Errorf("rerun job: explicit %t, rerun of %q; want an explicit rerun of %s", got.Explicit, got.RerunOf, v3.ID)
	}
	if v, id, err := s.LatestVersion(ctx, "generic", cl); err != nil || v != 4 || id != j.ID {
		t.Fatalf("head: %d %s %v, want 4 %s", v, id, err, j.ID)
	}
	// The same version by webhook afterwards: the job exists (no second
	// send operation); an older one is stale.
	if res := storetest.Create(t, s, storetest.NewJob(cl, 4), "k4", "b4"); res.Outcome != store.VersionExists || res.Job.ID != j.ID {
		t.Fatalf("v4 by webhook after the rerun: outcome %v, want VersionExists", res.Outcome)
	}
	if res := storetest.Create(t, s, storetest.NewJob(cl, 2), "k2", "b2"); res.Outcome != store.Stale || res.CurrentVersion != 4 {
		t.Fatalf("v2 by webhook after the rerun: %+v, want Stale at 4", res)
	}
	if _, err := s.PlanRerun(ctx, "generic", cl+"-unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown changelist: %v, want ErrNotFound", err)
	}
}

// Concurrent reruns must not create the same version twice, nor two
// versions from one plan: of N reruns started from the same latest
// version, exactly one creates v+1; the others are told a concurrent rerun
// won.
func TestRerun_ConcurrentFromOnePlan_ExactlyOneVersion(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	cl := testenv.Prefix(t)
	storetest.Create(t, s, storetest.NewJob(cl, 1), "k1", "b1")
	plan, err := s.PlanRerun(ctx, "generic", cl)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		created   []job.Job
		conflicts int
	)
	for range n {
		wg.Go(func() {
			j, err := s.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: "race"})
			mu.Lock()
			defer mu.Unlock()
			var ce *store.RerunConflictError
			switch {
			case err == nil:
				created = append(created, j)
			case errors.As(err, &ce) && errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(created) != 1 || conflicts != n-1 || created[0].ReviewVersion != 2 {
		t.Fatalf("%d created %+v, %d conflicts; want exactly one v2 and %d conflicts", len(created), created, conflicts, n-1)
	}
	// Planned again, the next rerun takes v3.
	plan, err = s.PlanRerun(ctx, "generic", cl)
	if err != nil || plan.NextVersion != 3 {
		t.Fatalf("second plan: %+v %v, want next 3", plan, err)
	}
	if j, err := s.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: "again"}); err != nil || j.ReviewVersion != 3 {
		t.Fatalf("second rerun: %+v %v, want v3", j, err)
	}
}

// GitHub and GitLab versions come from the changelist's counter: a rerun
// draws from it too, and carries the source reference (so fetch reads the
// same commit) and the reviewers without an address to the plan; a commit
// pushed after the rerun gets a higher version than the rerun's, never the
// same.
func TestRerun_CounterSource_CopiesSourceRef_NextCommitHigher(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	cl := "acme/api#" + testenv.Prefix(t)
	v, err := s.AssignVersion(ctx, "github", cl, shaA)
	if err != nil {
		t.Fatal(err)
	}
	j1 := storetest.NewJob(cl, v)
	j1.Source, j1.ID, j1.Recipients = "github", job.NewID("github", cl, v), []string{}
	ref := store.SourceRef{Source: "github", Repo: "acme/api", Number: 7, HeadSHA: shaA, Reviewers: []string{"octocat"}}
	if err := s.PutSourceRef(ctx, j1.ID, ref); err != nil {
		t.Fatal(err)
	}
	storetest.Create(t, s, j1, "g1", "g1")
	// What fetch records.
	if err := s.Advance(ctx, j1.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{
		Reviewers: &store.FetchedReviewers{Recipients: []string{"octo@example.com"}, NoEmail: []string{"github:hubot"}}}); err != nil {
		t.Fatal(err)
	}
	plan, err := s.PlanRerun(ctx, "github", cl)
	if err != nil {
		t.Fatal(err)
	}
	if plan.SourceRef == nil || plan.SourceRef.HeadSHA != shaA || !slices.Equal(plan.NoEmailReviewers, []string{"github:hubot"}) ||
		!slices.Equal(plan.Latest.Recipients, []string{"octo@example.com"}) || plan.NextVersion != v+1 {
		t.Fatalf("plan %+v", plan)
	}
	r, err := s.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: "r"})
	if err != nil || r.ReviewVersion != v+1 {
		t.Fatalf("rerun: %+v %v, want version %d", r, err, v+1)
	}
	if got, err := s.GetSourceRef(ctx, r.ID); err != nil || got.HeadSHA != shaA || got.Number != 7 {
		t.Fatalf("rerun's source reference: %+v %v", got, err)
	}
	next, err := s.AssignVersion(ctx, "github", cl, shaB)
	if err != nil || next <= r.ReviewVersion {
		t.Fatalf("a commit after the rerun got version %d (%v), want more than %d", next, err, r.ReviewVersion)
	}
}
