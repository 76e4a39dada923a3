package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// Votes runs the vote store's suite against the stores open returns
// (R-VOTE-1): a vote records once however often it is cast, the latest
// choice replaces the earlier, and findings and emails vote apart.
func Votes(t *testing.T, open func(t *testing.T) store.Votes) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	v := func(delivery, finding string, c vote.Choice, m int) vote.Vote {
		return vote.Vote{DeliveryID: delivery, FindingID: finding, Choice: c, Rule: "debug-print", VotedAt: at.Add(time.Duration(m) * time.Minute)}
	}

	// Rules: R-VOTE-1.
	t.Run("RecordsOnceLatestChoiceWins", func(t *testing.T) {
		s := open(t)
		for i, want := range []vote.Outcome{vote.Recorded, vote.Repeat, vote.Repeat} {
			got, err := s.Record(ctx, v("d_1", "f1", vote.Useful, i))
			if err != nil || got != want {
				t.Fatalf("click %d: %q, %v; want %q", i+1, got, err, want)
			}
		}
		// Many clicks at once, from several devices: still one vote.
		var wg sync.WaitGroup
		outcomes := make([]vote.Outcome, 8)
		for i := range outcomes {
			wg.Go(func() {
				var err error
				if outcomes[i], err = s.Record(ctx, v("d_1", "f2", vote.Wrong, 0)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		recorded := 0
		for _, o := range outcomes {
			if o == vote.Recorded {
				recorded++
			}
		}
		if recorded != 1 {
			t.Fatalf("concurrent clicks: %v, want exactly one recorded", outcomes)
		}
		if got, err := s.Record(ctx, v("d_1", "f1", vote.Wrong, 5)); err != nil || got != vote.Changed {
			t.Fatalf("the other choice: %q, %v; want changed", got, err)
		}
		if _, err := s.Record(ctx, v("d_2", "f1", vote.Useful, 6)); err != nil {
			t.Fatal(err)
		}
		got, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[[2]string]vote.Vote{
			{"d_1", "f1"}: v("d_1", "f1", vote.Wrong, 5),
			{"d_1", "f2"}: v("d_1", "f2", vote.Wrong, 0),
			{"d_2", "f1"}: v("d_2", "f1", vote.Useful, 6),
		}
		if len(got) != len(want) {
			t.Fatalf("votes %+v, want %d", got, len(want))
		}
		for _, g := range got {
			w, ok := want[[2]string{g.DeliveryID, g.FindingID}]
			if !ok || g.Choice != w.Choice || g.Rule != w.Rule || !g.VotedAt.Equal(w.VotedAt) {
				t.Errorf("vote %+v, want %+v", g, w)
			}
		}
	})
}
