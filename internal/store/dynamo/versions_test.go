package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

const (
	shaA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	shaB = "34c5c7793cb3b279e22454cb6750c80560547b3a"
	shaC = "0123456789abcdef0123456789abcdef01234567"
)

// GitHub and GitLab payloads carry no review version: intake assigns one
// per head commit. Concurrent deliveries of the same commit (GitHub retries
// and redeliveries, two events for one push) all get one version; a new
// commit gets a higher one; the first commit keeps its version.
func TestAssignVersion_ConcurrentSameSHAOneVersion_NewSHAHigher(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	const n = 16
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := s.AssignVersion(ctx, "github", "acme/api#7", shaA)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = v
		})
	}
	wg.Wait()
	first := got[0]
	for i, v := range got {
		if v != first || v < 1 {
			t.Fatalf("delivery %d got version %d, delivery 0 got %d: one commit must have one version (all: %v)", i, v, first, got)
		}
	}
	again, err := s.AssignVersion(ctx, "github", "acme/api#7", shaA)
	if err != nil || again != first {
		t.Fatalf("the same commit later: version %d (%v), want %d", again, err, first)
	}
	next, err := s.AssignVersion(ctx, "github", "acme/api#7", shaB)
	if err != nil {
		t.Fatal(err)
	}
	if next <= first {
		t.Fatalf("a new commit got version %d, not higher than %d", next, first)
	}
	if v, _ := s.AssignVersion(ctx, "github", "acme/api#7", shaA); v != first {
		t.Fatalf("the first commit moved from version %d to %d", first, v)
	}
}

// Without a race there are no gaps: commits seen one after another are
// versions 1, 2, 3. Changelists and sources are counted apart.
func TestAssignVersion_SequentialIsDenseAndScoped(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	for i, sha := range []string{shaA, shaB, shaC} {
		v, err := s.AssignVersion(ctx, "gitlab", "group/proj!3", sha)
		if err != nil || v != i+1 {
			t.Fatalf("commit %d: version %d (%v), want %d", i, v, err, i+1)
		}
	}
	for _, cl := range []struct{ source, id string }{{"gitlab", "group/proj!4"}, {"github", "group/proj!3"}} {
		if v, err := s.AssignVersion(ctx, cl.source, cl.id, shaC); err != nil || v != 1 {
			t.Fatalf("%s %s: version %d (%v), want 1 (counted apart)", cl.source, cl.id, v, err)
		}
	}
	if _, err := s.AssignVersion(ctx, "github", "", shaA); err == nil {
		t.Fatal("assigned a version without a changelist")
	}
}

// Concurrent deliveries of different commits get distinct versions, and
// every delivery of a commit agrees with the others.
func TestAssignVersion_ConcurrentDistinctSHAsDistinctVersions(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	shas := []string{shaA, shaB, shaC}
	var mu sync.Mutex
	seen := map[string]map[int]bool{}
	var wg sync.WaitGroup
	for i := range 24 {
		sha := shas[i%len(shas)]
		wg.Go(func() {
			v, err := s.AssignVersion(ctx, "github", "acme/api#9", sha)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[sha] == nil {
				seen[sha] = map[int]bool{}
			}
			seen[sha][v] = true
		})
	}
	wg.Wait()
	byVersion := map[int]string{}
	for sha, vs := range seen {
		if len(vs) != 1 {
			t.Fatalf("commit %s got versions %v", sha, vs)
		}
		for v := range vs {
			if other, dup := byVersion[v]; dup {
				t.Fatalf("commits %s and %s share version %d", sha, other, v)
			}
			byVersion[v] = sha
		}
	}
}

// The source reference is recorded once: the first delivery's is kept.
func TestSourceRef_FirstWriteKept(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	id := job.NewID("github", "acme/api#7", 1)
	if _, err := s.GetSourceRef(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing reference: %v, want ErrNotFound", err)
	}
	first := store.SourceRef{Source: "github", Repo: "acme/api", Number: 7, HeadSHA: shaA, Reviewers: []string{"octocat"}}
	if err := s.PutSourceRef(ctx, id, first); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSourceRef(ctx, id, store.SourceRef{Source: "github", Repo: "acme/api", Number: 7, HeadSHA: shaA, Reviewers: []string{"hubot"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSourceRef(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(first) {
		t.Fatalf("reference %+v, want the first %+v", got, first)
	}
	// An empty reviewer list round-trips as empty, not as a missing field.
	gid := job.NewID("gerrit", "p~1", 2)
	if err := s.PutSourceRef(ctx, gid, store.SourceRef{Source: "gerrit", Repo: "p", Number: 1, Patchset: 2, HeadSHA: shaB}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetSourceRef(ctx, gid); err != nil || g.Patchset != 2 || len(g.Reviewers) != 0 {
		t.Fatalf("gerrit reference %+v (%v)", g, err)
	}
}

// The reviewers without an address are written by the fetch stage's
// Advance and read back by notify; a job without them has none.
func TestNoEmailReviewers_WrittenByAdvance(t *testing.T) {
	s := newJobs(t)
	ctx := context.Background()
	j := storetest.NewJob("cl-ne", 1)
	storetest.Create(t, s, j, "k", "b")
	if got, err := s.NoEmailReviewers(ctx, j.ID); err != nil || len(got) != 0 {
		t.Fatalf("before fetch: %v (%v), want none", got, err)
	}
	err := s.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{
		Reviewers: &store.FetchedReviewers{Recipients: []string{"ann@example.com"}, NoEmail: []string{"github:hubot"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.NoEmailReviewers(ctx, j.ID)
	if err != nil || strings.Join(got, ",") != "github:hubot" {
		t.Fatalf("after fetch: %v (%v)", got, err)
	}
	after, err := s.Get(ctx, j.ID)
	if err != nil || strings.Join(after.Recipients, ",") != "ann@example.com" {
		t.Fatalf("recipients %v (%v)", after.Recipients, err)
	}
}
