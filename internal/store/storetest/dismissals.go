package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// Dismissals runs the dismissal store's suite against the stores open
// returns (R-VOTE-3): a reader's wrong hides a finding for that reader on
// that changelist only, the latest choice by when it was made wins, the
// marks are bounded, concurrent votes are all kept, and one read returns
// every recipient's marks.
func Dismissals(t *testing.T, open func(t *testing.T) store.Dismissals) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	min := func(m int) time.Time { return at.Add(time.Duration(m) * time.Minute) }
	marks := func(t *testing.T, s store.Dismissals, cl string, ids ...string) map[string]vote.Marks {
		t.Helper()
		got, err := s.Marks(ctx, cl, ids)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	mark := func(t *testing.T, s store.Dismissals, cl, rid, key string, c vote.Choice, m int, want vote.MarkOutcome) {
		t.Helper()
		got, err := s.Mark(ctx, cl, rid, key, c, min(m))
		if err != nil || got != want {
			t.Fatalf("%s %s %s at +%dm: %q, %v; want %q", rid, key, c, m, got, err, want)
		}
	}

	// Rules: R-VOTE-3.
	t.Run("PerReaderAndChangelistLatestWins", func(t *testing.T) {
		s := open(t)
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Useful, 0, vote.MarkUnchanged) // nothing to undo: nothing kept
		if got := marks(t, s, "generic:cl-1", "r_ann"); len(got) != 0 {
			t.Fatalf("a useful on an unmarked finding kept %v", got)
		}
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Wrong, 1, vote.MarkDismissed)
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Wrong, 2, vote.MarkUnchanged)
		mark(t, s, "generic:cl-1", "r_ann", "k2", vote.Wrong, 2, vote.MarkDismissed)
		got := marks(t, s, "generic:cl-1", "r_ann", "r_bo", "r_ann")
		if len(got) != 1 || !got["r_ann"].Dismissed("k1") || !got["r_ann"].Dismissed("k2") || got["r_ann"].Dismissed("k3") {
			t.Fatalf("marks %v, want ann's k1 and k2 only", got)
		}
		if got := marks(t, s, "generic:cl-2", "r_ann"); len(got) != 0 {
			t.Fatalf("another changelist sees %v", got)
		}
		// The reader changes their mind: the finding shows again.
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Useful, 3, vote.MarkRestored)
		// A wrong clicked before that useful, arriving after it, is stale.
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Wrong, 2, vote.MarkStale)
		got = marks(t, s, "generic:cl-1", "r_ann")
		if got["r_ann"].Dismissed("k1") || !got["r_ann"].Dismissed("k2") {
			t.Fatalf("after useful: %v, want k1 shown, k2 hidden", got)
		}
		if m := got["r_ann"]["k2"]; m.Choice != vote.Wrong || !m.At.Equal(min(2)) {
			t.Fatalf("k2's mark %+v, want wrong at +2m", m)
		}
		mark(t, s, "generic:cl-1", "r_ann", "k1", vote.Wrong, 4, vote.MarkDismissed)
		if got := marks(t, s, "generic:cl-1", "r_ann"); !got["r_ann"].Dismissed("k1") {
			t.Fatalf("wrong again: %v", got)
		}
	})

	// Rules: R-VOTE-3.
	t.Run("BoundedAndCounted", func(t *testing.T) {
		s := open(t)
		mark(t, s, "generic:cl-b", "r_x", "useful-1", vote.Wrong, 0, vote.MarkDismissed)
		mark(t, s, "generic:cl-b", "r_x", "useful-1", vote.Useful, 1, vote.MarkRestored)
		for i := 1; i < vote.MaxMarks; i++ {
			mark(t, s, "generic:cl-b", "r_x", fmt.Sprintf("k%03d", i), vote.Wrong, 2, vote.MarkDismissed)
		}
		// Full: the useful mark makes room, then nothing does.
		mark(t, s, "generic:cl-b", "r_x", "one-more", vote.Wrong, 3, vote.MarkDismissed)
		mark(t, s, "generic:cl-b", "r_x", "too-many", vote.Wrong, 3, vote.MarkFull)
		got := marks(t, s, "generic:cl-b", "r_x")["r_x"]
		if len(got) != vote.MaxMarks || got.Dismissed("too-many") || !got.Dismissed("one-more") || !got.Dismissed("k001") {
			t.Fatalf("%d marks kept, want %d with one-more and without too-many", len(got), vote.MaxMarks)
		}
		// A finding already kept can still change.
		mark(t, s, "generic:cl-b", "r_x", "k001", vote.Useful, 4, vote.MarkRestored)
	})

	// Rules: R-VOTE-3.
	t.Run("ConcurrentVotesAllKept", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if _, err := s.Mark(ctx, "generic:cl-c", "r_y", fmt.Sprintf("k%d", i), vote.Wrong, min(i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := marks(t, s, "generic:cl-c", "r_y")["r_y"]
		for i := range 8 {
			if !got.Dismissed(fmt.Sprintf("k%d", i)) {
				t.Errorf("k%d lost: %v", i, got)
			}
		}
	})

	// Rules: R-VOTE-3.
	t.Run("EveryRecipientInOneRead", func(t *testing.T) {
		s := open(t)
		var ids []string
		for i := range 130 { // more than one BatchGetItem's 100 keys
			ids = append(ids, fmt.Sprintf("r_%03d", i))
		}
		for _, i := range []int{0, 99, 100, 129} {
			mark(t, s, "generic:cl-m", ids[i], "k", vote.Wrong, 0, vote.MarkDismissed)
		}
		got := marks(t, s, "generic:cl-m", ids...)
		if len(got) != 4 || !got["r_000"].Dismissed("k") || !got["r_129"].Dismissed("k") || !got["r_100"].Dismissed("k") {
			t.Fatalf("marks of %d recipients %v, want 4", len(got), got)
		}
	})
}
