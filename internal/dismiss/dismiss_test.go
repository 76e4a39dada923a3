package dismiss_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/dismiss"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/vote"
)

// A vote on an email whose row is gone (expired with the retention) is
// still recorded for make eval, with the rule its link named, and keeps
// no mark; a finding named by number needs the email, and an unknown
// choice is refused.
// Rules: R-VOTE-2, R-VOTE-3.
func TestRecord_EmailGone_VoteKeptNoMark(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	votes, marks := memstore.NewVotes(), memstore.NewDismissals()
	r := &dismiss.Recorder{Votes: votes, Marks: marks, Rows: memstore.NewDeliveries(nil), Jobs: memstore.NewJobs(nil)}
	res, err := r.Record(ctx, "d_gone", dismiss.Ref{ID: "f1", Rule: "debug-print"}, vote.Wrong, now)
	if err != nil || res.Vote != vote.Recorded || res.Mark != "" {
		t.Fatalf("vote on a gone email: %+v, %v; want recorded, no mark", res, err)
	}
	if all, _ := votes.List(ctx); len(all) != 1 || all[0].Rule != "debug-print" || all[0].Choice != vote.Wrong {
		t.Fatalf("votes %+v", all)
	}
	if _, err := r.Record(ctx, "d_gone", dismiss.Ref{Number: 1}, vote.Wrong, now); !errors.Is(err, dismiss.ErrUnknownFinding) {
		t.Fatalf("by number on a gone email: %v, want ErrUnknownFinding", err)
	}
	if _, err := r.Record(ctx, "d_gone", dismiss.Ref{ID: "f1"}, vote.Choice("mute"), now); err == nil {
		t.Fatal("an unknown choice was recorded")
	}
	// Without a mark store: votes only, as before R-VOTE-3.
	plain := &dismiss.Recorder{Votes: votes}
	if res, err := plain.Record(ctx, "d_x", dismiss.Ref{ID: "f2", Rule: "r"}, vote.Useful, now); err != nil || res.Vote != vote.Recorded || res.Mark != "" {
		t.Fatalf("votes only: %+v, %v", res, err)
	}
}
