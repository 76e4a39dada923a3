package storetest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
)

// ReviewerStores are the stores of one test: rosters, the directory, and
// the jobs table as reviewer changes use it.
type ReviewerStores struct {
	Rosters   store.Rosters
	Directory store.Directory
	Jobs      store.Jobs
}

// ReviewerStoresOpener opens empty stores for one test.
type ReviewerStoresOpener func(t *testing.T) ReviewerStores

// Reviewers runs the suite of the reviewer stores against the stores open
// returns.
func Reviewers(t *testing.T, open ReviewerStoresOpener) {
	ctx := context.Background()
	at := func(m int) time.Time {
		return time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute)
	}
	ev := func(u string, k reviewers.Kind, t time.Time) reviewers.Event {
		return reviewers.Event{Username: u, Kind: k, At: t}
	}

	// Concurrent writers of one roster, each with its events in its own
	// order: the stored roster is the merge of all of them.
	// Rules: R-REVIEWERS-2.
	t.Run("Roster_ConcurrentWritersMerge", func(t *testing.T) {
		s := open(t)
		events := [][]reviewers.Event{
			{ev("alice", reviewers.Requested, at(1)), ev("alice", reviewers.Removed, at(3))},
			{ev("bob", reviewers.Reviewed, at(2)), ev("Alice", reviewers.Reviewed, at(2))},
			{ev("carol", reviewers.Requested, at(4))},
			{ev("alice", reviewers.Removed, at(3)), ev("bob", reviewers.Removed, at(1))},
		}
		var wg sync.WaitGroup
		errs := make([]error, len(events))
		for i, evs := range events {
			wg.Go(func() { _, errs[i] = s.Rosters.Apply(ctx, "github", "o/r#1", evs) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Rosters.Get(ctx, "github", "o/r#1")
		if err != nil {
			t.Fatal(err)
		}
		want := reviewers.Roster{}
		for _, evs := range events {
			for _, ev := range evs {
				want.Apply(ev)
			}
		}
		if len(got) != 3 {
			t.Fatalf("roster %+v, want alice, bob, carol", got)
		}
		for k, m := range want {
			g := got[k]
			if !g.Requested.Equal(m.Requested) || !g.Reviewed.Equal(m.Reviewed) || !g.Removed.Equal(m.Removed) {
				t.Errorf("%s: %+v, want %+v", k, g, m)
			}
		}
		if other, _ := s.Rosters.Get(ctx, "gitlab", "o/r#1"); len(other) != 0 {
			t.Fatalf("another source's changelist shares the roster: %+v", other)
		}
	})

	// Set, look up case-insensitively per source, list, remove (a removal
	// stays listed as one), and the unknown list forgets a name once set.
	// Rules: R-REVIEWERS-4.
	t.Run("Directory_SetLookupListRemove", func(t *testing.T) {
		s := open(t)
		if err := s.Directory.NoteUnknown(ctx, "github", []string{"Hubot", "octocat", "hubot"}); err != nil {
			t.Fatal(err)
		}
		if u, _ := s.Directory.Unknown(ctx, "github"); !reflect.DeepEqual(u, []string{"hubot", "octocat"}) {
			t.Fatalf("unknown %v", u)
		}
		if _, err := s.Directory.Set(ctx, "github", "OctoCat", "octo@example.com", "ops"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Directory.Set(ctx, "gitlab", "octocat", "other@example.com", "ops"); err != nil {
			t.Fatal(err)
		}
		if u, _ := s.Directory.Unknown(ctx, "github"); !reflect.DeepEqual(u, []string{"hubot"}) {
			t.Fatalf("unknown after set %v, want hubot only", u)
		}
		got, err := s.Directory.Entries(ctx, "github", []string{"octocat", "OCTOCAT", "hubot"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["octocat"].Email != "octo@example.com" || got["octocat"].Username != "OctoCat" || got["octocat"].UpdatedBy != "ops" {
			t.Fatalf("entries %+v", got)
		}
		existed, err := s.Directory.Remove(ctx, "github", "octocat", "ops")
		if err != nil || !existed {
			t.Fatalf("remove: %v %v", existed, err)
		}
		if existed, _ := s.Directory.Remove(ctx, "github", "nobody", "ops"); existed {
			t.Fatal("removing an unknown name reported an entry")
		}
		e, err := s.Directory.Get(ctx, "github", "OCTOCAT")
		if err != nil || !e.Removed || e.Email != "" {
			t.Fatalf("after remove: %+v %v", e, err)
		}
		list, err := s.Directory.List(ctx, "github")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Username != "nobody" || !list[1].Removed {
			t.Fatalf("list %+v", list)
		}
		if list, _ := s.Directory.List(ctx, "gitlab"); len(list) != 1 || list[0].Email != "other@example.com" {
			t.Fatalf("gitlab list %+v", list)
		}
		if _, err := s.Directory.Get(ctx, "gerrit", "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing entry: %v", err)
		}
	})

	// Reviewers added to a version: set unions (a repeat adds nothing
	// twice), added_rev counts each addition; notify's verdict applies only
	// to the revision it read.
	// Rules: R-REVIEWERS-1.
	// Rules: R-REVIEWERS-1, R-OUTBOX-8, R-EVIDENCE-5.
	t.Run("Job_AddedReviewersAndNotifyVerdict", func(t *testing.T) {
		s := open(t)
		j := NewJob("cl-added", 1)
		Create(t, s.Jobs, j, "k", "b")
		if err := s.Jobs.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{
			Reviewers: &store.FetchedReviewers{Recipients: []string{"a@example.com"}, NoEmail: []string{"github:z"}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Jobs.Advance(ctx, j.ID, job.StageLLM, 1, job.StatusInProgress, store.JobWrite{}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Jobs.AddReviewers(ctx, j.ID, []string{"b@example.com"}, []string{"github:y"})
		if err != nil {
			t.Fatal(err)
		}
		if got.AddedRev != 1 || !reflect.DeepEqual(got.AllRecipients(), []string{"a@example.com", "b@example.com"}) || got.Stage != job.StageNotify {
			t.Fatalf("after the first addition: rev %d, recipients %v, stage %s", got.AddedRev, got.AllRecipients(), got.Stage)
		}
		// Notify read revision 1; a second addition comes in before it
		// finishes.
		got, err = s.Jobs.AddReviewers(ctx, j.ID, []string{"b@example.com", "c@example.com"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.AddedRev != 2 || !reflect.DeepEqual(got.AllRecipients(), []string{"a@example.com", "b@example.com", "c@example.com"}) {
			t.Fatalf("after the second addition: rev %d, recipients %v", got.AddedRev, got.AllRecipients())
		}
		if err := s.Jobs.FinishNotify(ctx, j.ID, 1, job.StatusSucceeded, 1); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a verdict on revision 1 after revision 2: %v, want ErrConflict", err)
		}
		if err := s.Jobs.FinishNotify(ctx, j.ID, 2, job.StatusSucceeded, 2); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Jobs.Get(ctx, j.ID)
		if got.Status != job.StatusSucceeded || got.Stage != job.StageDone || got.AddedSeen != 2 {
			t.Fatalf("after the verdict: %s %s seen %d", got.Status, got.Stage, got.AddedSeen)
		}
		ids, err := s.Jobs.NoEmailReviewers(ctx, j.ID)
		if err != nil || !reflect.DeepEqual(ids, []string{"github:z", "github:y"}) {
			t.Fatalf("reviewers without an address %v %v", ids, err)
		}
		// A later addition to the finished job: reopened at notify.
		if got, err = s.Jobs.AddReviewers(ctx, j.ID, []string{"d@example.com"}, nil); err != nil || got.AddedRev != 3 || got.AddedSeen != 2 {
			t.Fatalf("after the job finished: %+v %v", got, err)
		}
		if err := s.Jobs.Reopen(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ = s.Jobs.Get(ctx, j.ID); got.Stage != job.StageNotify || got.Status != job.StatusInProgress || got.AddedRev != 4 {
			t.Fatalf("reopened: %s %s rev %d", got.Stage, got.Status, got.AddedRev)
		}
		// A row reopened (a transient bounce) while a notify run that read
		// revision 4 is still at work: its verdict fails, it runs again
		// (regression: the job was closed with the bounced row unsent).
		if err := s.Jobs.Reopen(ctx, j.ID); err != nil {
			t.Fatalf("reopen of a job at notify: %v", err)
		}
		if err := s.Jobs.FinishNotify(ctx, j.ID, 3, job.StatusSucceeded, 4); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a verdict from before the reopen: %v, want ErrConflict", err)
		}
		// A job nobody added to finishes with revision 0.
		k := NewJob("cl-plain", 1)
		Create(t, s.Jobs, k, "k2", "b2")
		for _, st := range []job.Stage{job.StageFetch, job.StageLLM} {
			if err := s.Jobs.Advance(ctx, k.ID, st, 1, job.StatusInProgress, store.JobWrite{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Jobs.FinishNotify(ctx, k.ID, 1, job.StatusNeedsIntervention, 0); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Jobs.Get(ctx, k.ID); got.Status != job.StatusNeedsIntervention || got.Stage != job.StageNotify {
			t.Fatalf("needs_intervention verdict: %s %s", got.Status, got.Stage)
		}
	})
}
