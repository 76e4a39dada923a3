package delivery_test

import (
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Missing evidence is proof that a send did not happen only once the
// evidence path has caught up past it: an event of a later message was
// recorded (the path works), and the feedback queue drained after the
// send plus the publish bound (every event of the send has been
// processed). Either alone is not enough: a recorded newer event says
// nothing of an older one still in the queue (regression: main's
// watermark, the newest event recorded, resent a send whose Send event
// sat in the queue behind a probe's — found by internal/explore); a
// drained queue says nothing when SES publishes nothing.
// Rules: R-OUTBOX-6, R-EVIDENCE-2.
func TestSettle_ResendOnlyWhenTheEvidencePathCaughtUp(t *testing.T) {
	lease := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const bound = 2 * time.Minute
	sending := delivery.Row{Status: delivery.StatusSending, LeaseUntil: lease}
	tests := []struct {
		name            string
		row             delivery.Row
		newest, drained time.Time
		want            delivery.Settlement
	}{
		{"nothing recorded, nothing drained", sending, time.Time{}, time.Time{}, delivery.Await},
		{"a newer event recorded, the queue never drained", sending, lease.Add(time.Hour), time.Time{}, delivery.Await},
		{"drained long after, no event ever recorded (path dead)", sending, time.Time{}, lease.Add(time.Hour), delivery.Await},
		{"drained long after, newest event before the send", sending, lease.Add(-time.Second), lease.Add(time.Hour), delivery.Await},
		{"newest at the send, drained within the bound", sending, lease, lease.Add(bound - time.Second), delivery.Await},
		{"newest at the send, drained exactly at send+bound", sending, lease, lease.Add(bound), delivery.Await},
		{"newest at the send, drained past send+bound", sending, lease, lease.Add(bound + time.Nanosecond), delivery.Resend},
		{"both far past", sending, lease.Add(time.Hour), lease.Add(time.Hour), delivery.Resend},
		{"a Send event on the row, whatever the path", withSend(sending), time.Time{}, time.Time{}, delivery.Backfill},
		{"a Delivery event on the row", delivery.Row{Status: delivery.StatusSending, LeaseUntil: lease, DeliveredAt: lease}, lease.Add(time.Hour), lease.Add(time.Hour), delivery.Backfill},
		{"a known provider message id", delivery.Row{Status: delivery.StatusSending, LeaseUntil: lease, NotificationID: "ses-1"}, lease.Add(time.Hour), lease.Add(time.Hour), delivery.Backfill},
		{"no lease: the last update is the bound", delivery.Row{Status: delivery.StatusSending, UpdatedAt: lease}, lease, lease.Add(bound + time.Second), delivery.Resend},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := delivery.Settle(tt.row, delivery.Evidence{Newest: tt.newest, Drained: tt.drained, Bound: bound}); got != tt.want {
				t.Errorf("Settle = %v; want %v", got, tt.want)
			}
		})
	}
}

func withSend(r delivery.Row) delivery.Row {
	r.SendEventAt = r.LeaseUntil.Add(-time.Second)
	r.ProviderMessageID = "ses-1"
	return r
}

// A row awaiting evidence for longer than a healthy path takes is held:
// the job must not read succeeded, and the operator can see it.
// Rules: R-OUTBOX-8.
func TestHeld_AfterTwiceTheMargin(t *testing.T) {
	lease := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const margin = time.Minute
	r := delivery.Row{Status: delivery.StatusSending, LeaseUntil: lease}
	if r.Held(lease.Add(2*margin), margin) {
		t.Error("held at exactly lease+2·margin; want only after")
	}
	if !r.Held(lease.Add(2*margin+time.Second), margin) {
		t.Error("not held after lease+2·margin")
	}
	if withSend(r).Held(lease.Add(time.Hour), margin) {
		t.Error("a row with evidence is not held: it is backfilled")
	}
	if (delivery.Row{Status: delivery.StatusPending}).Held(lease.Add(time.Hour), margin) {
		t.Error("a pending row is not held")
	}
}

// Regression: a row moved to reconciling keeps the notified_at of its
// mark, and Summarize counted it as complete, so the job read succeeded
// while the row was held for an operator.
func TestSummarize_ReconcilingWithNotifiedAtBlocksTheJob(t *testing.T) {
	sent := delivery.Row{Status: delivery.StatusSent, NotifiedAt: time.Now()}
	held := delivery.Row{Status: delivery.StatusReconciling, NotifiedAt: time.Now(), NotificationID: "ses-1"}
	if got := delivery.Summarize([]delivery.Row{sent, held}); got != delivery.Blocked {
		t.Fatalf("Summarize = %v; want Blocked (needs_intervention)", got)
	}
}

// Under the hold policy a send the evidence path has caught up past, with
// no event naming it, is withheld, never resent; evidence still settles
// it, and a path that has not caught up still waits.
// Rules: R-EVIDENCE-9.
func TestSettle_HoldPolicyNeverResendsWithoutEvidence(t *testing.T) {
	lease := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	sending := delivery.Row{Status: delivery.StatusSending, LeaseUntil: lease}
	far := delivery.Evidence{Newest: lease.Add(time.Hour), Drained: lease.Add(time.Hour), Bound: time.Minute}
	hold := far
	hold.Policy = delivery.HoldUncertain
	if got := delivery.Settle(sending, far); got != delivery.Resend {
		t.Errorf("resend policy: %v, want resend", got)
	}
	if got := delivery.Settle(sending, hold); got != delivery.Withhold {
		t.Errorf("hold policy: %v, want withhold", got)
	}
	if got := delivery.Settle(withSend(sending), hold); got != delivery.Backfill {
		t.Errorf("hold policy, Send event on the row: %v, want backfill", got)
	}
	hold.Drained = time.Time{}
	if got := delivery.Settle(sending, hold); got != delivery.Await {
		t.Errorf("hold policy, path behind: %v, want await", got)
	}
	for in, want := range map[string]delivery.UncertainSend{"": delivery.ResendUncertain, "resend": delivery.ResendUncertain, "hold": delivery.HoldUncertain} {
		if got, err := delivery.ParseUncertainSend(in); err != nil || got != want {
			t.Errorf("ParseUncertainSend(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := delivery.ParseUncertainSend("sometimes"); err == nil {
		t.Error("an unknown policy was accepted")
	}
}
