package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// Learnings runs the learnings store's suite against the stores open
// returns (R-LEARN-1, R-LEARN-2): one choice per reader, rule and
// repository, the latest; the bounds on readers and rules refuse what is
// past them; a decision is made once, on a learning that exists; only
// accepted rules are read back, per repository.
func Learnings(t *testing.T, open func(t *testing.T) store.Learnings) {
	ctx := context.Background()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	const repo, other = "generic:acme/billing", "generic:acme/ledger"
	tally := func(t *testing.T, s store.Learnings, repo, rule, reader string, c vote.Choice) vote.TallyOutcome {
		t.Helper()
		got, err := s.Tally(ctx, vote.Tally{Repository: repo, Rule: rule, Reader: reader, Choice: c, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	find := func(t *testing.T, s store.Learnings, repo, rule string) vote.Learning {
		t.Helper()
		all, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range all {
			if l.Repository == repo && l.Rule == rule {
				return l
			}
		}
		t.Fatalf("no learning of %s in %s among %+v", rule, repo, all)
		return vote.Learning{}
	}

	// Rules: R-LEARN-1.
	t.Run("OneChoicePerReaderTheLatest", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if _, err := s.Tally(ctx, vote.Tally{Repository: repo, Rule: "debug-print", Reader: fmt.Sprintf("r_%d", i), Choice: vote.Wrong, At: at}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		tally(t, s, repo, "debug-print", "r_0", vote.Wrong) // the same again
		tally(t, s, repo, "debug-print", "r_2", vote.Useful)
		tally(t, s, other, "debug-print", "r_9", vote.Wrong)
		l := find(t, s, repo, "debug-print")
		if l.Wrong != 2 || l.Useful != 1 || l.State != "" || l.ID != vote.LearningID(repo, "debug-print") {
			t.Fatalf("learning %+v, want 2 wrong, 1 useful, undecided", l)
		}
		if l := find(t, s, other, "debug-print"); l.Wrong != 1 || l.Useful != 0 {
			t.Fatalf("the other repository's %+v, want its own one wrong", l)
		}
		if got, err := s.Get(ctx, l.ID); err != nil || got.Wrong != 2 || got.Rule != "debug-print" || got.Repository != repo {
			t.Fatalf("Get: %+v, %v", got, err)
		}
	})

	// Rules: R-LEARN-1.
	t.Run("BoundsRefuseWhatIsPastThem", func(t *testing.T) {
		s := open(t)
		for i := range vote.MaxLearnReaders {
			if got := tally(t, s, repo, "todo-added", fmt.Sprintf("r_%d", i), vote.Wrong); got != vote.TallyCounted {
				t.Fatalf("reader %d: %q", i, got)
			}
		}
		if got := tally(t, s, repo, "todo-added", "r_late", vote.Wrong); got != vote.TallyFull {
			t.Fatalf("a reader past the bound: %q, want full", got)
		}
		// A reader already counted may say it again, or change their mind.
		if got := tally(t, s, repo, "todo-added", "r_0", vote.Wrong); got != vote.TallyCounted {
			t.Fatalf("a counted reader again: %q", got)
		}
		if got := tally(t, s, repo, "todo-added", "r_0", vote.Useful); got != vote.TallyCounted {
			t.Fatalf("a counted reader's change: %q", got)
		}
		if l := find(t, s, repo, "todo-added"); l.Wrong != vote.MaxLearnReaders-1 || l.Useful != 1 {
			t.Fatalf("%+v", l)
		}
		for i := 1; i < vote.MaxLearnRules; i++ {
			if got := tally(t, s, repo, fmt.Sprintf("rule-%d", i), "r_0", vote.Wrong); got != vote.TallyCounted {
				t.Fatalf("rule %d: %q", i, got)
			}
		}
		if got := tally(t, s, repo, "one-rule-too-many", "r_0", vote.Wrong); got != vote.TallyFull {
			t.Fatalf("a rule past the bound: %q, want full", got)
		}
		if got := tally(t, s, repo, "rule-1", "r_1", vote.Wrong); got != vote.TallyCounted {
			t.Fatalf("a rule already tallied: %q", got)
		}
		if got := tally(t, s, other, "one-rule-too-many", "r_0", vote.Wrong); got != vote.TallyCounted {
			t.Fatalf("another repository's bound is its own: %q", got)
		}
	})

	// Rules: R-LEARN-2.
	t.Run("DecidedOnceAcceptedReadPerRepository", func(t *testing.T) {
		s := open(t)
		for _, rule := range []string{"debug-print", "todo-added", "long-line"} {
			tally(t, s, repo, rule, "r_1", vote.Wrong)
		}
		tally(t, s, other, "debug-print", "r_1", vote.Wrong)
		if _, err := s.Decide(ctx, vote.LearningID(repo, "no-such-rule"), vote.Accepted, at); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown learning: %v, want ErrNotFound", err)
		}
		if _, err := s.Decide(ctx, "not-an-id", vote.Accepted, at); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a malformed id: %v, want ErrNotFound", err)
		}
		id := vote.LearningID(repo, "debug-print")
		l, err := s.Decide(ctx, id, vote.Accepted, at)
		if err != nil || l.State != vote.Accepted || !l.DecidedAt.Equal(at) || l.Rule != "debug-print" {
			t.Fatalf("accept: %+v, %v", l, err)
		}
		// Two operators at once, or a second accept: decided once.
		if _, err := s.Decide(ctx, id, vote.Rejected, at.Add(time.Minute)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("deciding again: %v, want ErrConflict", err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.Decide(ctx, vote.LearningID(repo, "todo-added"), vote.Rejected, at) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("concurrent decisions: %v, want one to win", errs)
		}
		if got, err := s.Accepted(ctx, repo); err != nil || !slices.Equal(got, []string{"debug-print"}) {
			t.Fatalf("accepted: %q, %v; want the accepted rule only", got, err)
		}
		if got, err := s.Accepted(ctx, other); err != nil || len(got) != 0 {
			t.Fatalf("the other repository's accepted: %q, %v; want none", got, err)
		}
		if got, err := s.Accepted(ctx, "generic:nobody/nothing"); err != nil || len(got) != 0 {
			t.Fatalf("a repository without learnings: %q, %v", got, err)
		}
		if l := find(t, s, repo, "todo-added"); l.State != vote.Rejected {
			t.Fatalf("%+v, want rejected", l)
		}
		// The votes keep being counted after a decision.
		tally(t, s, repo, "debug-print", "r_2", vote.Wrong)
		if l := find(t, s, repo, "debug-print"); l.Wrong != 2 || l.State != vote.Accepted {
			t.Fatalf("%+v", l)
		}
	})
}
