package notify

import (
	"context"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// StandingGate settles, without a send, the rows of recipients who muted
// this repository (unsubscribed from it) or unsubscribed from everything
// as skipped_unsubscribed, and of suppressed addresses as suppressed
// (R-UNSUB-2, R-EVIDENCE-6), from the standings the run read before its
// rows were rendered (Run.Standings: Notify.Recipients). The delivery
// mode in the same standings routes the rows left to a digest (the
// digest gate) without a second read.
type StandingGate struct{}

// NewStandingGate is the gate of the recipients' standings; it reads
// nothing of its own, and answers only when the notifier reads the
// standings (Notify.Recipients).
func NewStandingGate() *StandingGate { return &StandingGate{} }

func (*StandingGate) rank() int    { return 1 }
func (*StandingGate) name() string { return "standing" }

func (*StandingGate) decide(_ context.Context, run *Run) (decider, error) {
	if run.Standings == nil {
		return nil, nil
	}
	j := run.Job
	repo := unsubscribe.Repository(j.Source, j.ChangelistID)
	return func(r delivery.VersionRow) Decision {
		st, ok := run.Standings[unsubscribe.RecipientID(r.Recipient)]
		if !ok {
			return Decision{}
		}
		status, skip := st.SkipAs(repo)
		if !skip {
			return Decision{}
		}
		reason := st.Reason
		if status == delivery.StatusSkippedUnsubscribed {
			reason = "repository"
			if st.Preferences.UnsubscribedAll {
				reason = "all"
			}
		}
		return Decision{Status: status, Reason: reason,
			then: func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error) {
				run.log.InfoContext(ctx, "delivery skipped", "delivery_id", got.ID, "job_id", j.ID, "status", status, "reason", reason)
				return got, nil
			}}
	}, nil
}
