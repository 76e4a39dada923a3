package delivery_test

import (
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// A quietly settled row is terminal and never sent: Decide skips it,
// Summarize counts it settled, it is never claimable; the same diff and
// nothing new count as the recipient having the content, superseded does
// not.
// Rules: R-QUIET-1, R-QUIET-2, R-QUIET-3.
func TestQuietStatuses_TerminalNeverSent(t *testing.T) {
	now := time.Now()
	for _, st := range delivery.QuietStatuses() {
		r := delivery.Row{Status: st}
		if st.Claimable() || !st.Done() || delivery.Decide(r, now) != delivery.Skip || r.Unsent() {
			t.Errorf("%s: claimable %v, done %v, decide %v; want terminal, skipped", st, st.Claimable(), st.Done(), delivery.Decide(r, now))
		}
		if delivery.Summarize([]delivery.Row{r}) != delivery.Complete {
			t.Errorf("%s: a job with only this row is not complete", st)
		}
		if want := st != delivery.StatusSuperseded; r.Reached() != want {
			t.Errorf("%s: Reached %v, want %v", st, r.Reached(), want)
		}
	}
	if !(delivery.Row{Status: delivery.StatusPending}).Unsent() || (delivery.Row{Status: delivery.StatusSending}).Unsent() ||
		(delivery.Row{Status: delivery.StatusFailedTransient, NotificationID: "m"}).Unsent() {
		t.Error("Unsent: only a claimable row with no sign of a send")
	}
	if !(delivery.Row{Status: delivery.StatusSent, NotifiedAt: now}).Reached() || (delivery.Row{Status: delivery.StatusPending}).Reached() {
		t.Error("Reached: a sent row has, a pending one not")
	}
}

// A row SES accepted and then undid — rejected for its content, bounced
// for good, or bounced transiently after its resends ran out — did not
// reach its reader: no quiet settlement may stand on it, whatever its
// status says. A complaint came from a reader who had the message. A
// row superseded or digested carries a superseded row (what Judge
// counts), never a same-diff or nothing-new one.
// Rules: R-QUIET-4, R-QUIET-1, R-QUIET-2, R-QUIET-3.
func TestReached_UndoneByARejectOrABounce(t *testing.T) {
	now := time.Now()
	sent := delivery.Row{Status: delivery.StatusSent, NotificationID: "m", NotifiedAt: now, SendEventAt: now}
	rejected := sent
	rejected.Status, rejected.LastErrorClass, rejected.RejectedAt = delivery.StatusFailedPermanent, "REJECTED", now
	bounced := sent
	bounced.Status, bounced.BouncedAt, bounced.BounceType = delivery.StatusSuppressed, now, "Permanent"
	softOut := sent
	softOut.BouncedAt, softOut.BounceType = now, "Transient"
	complained := sent
	complained.Status, complained.ComplainedAt = delivery.StatusSuppressed, now
	for _, c := range []struct {
		name       string
		r          delivery.Row
		reached    bool
		superseded bool // Carries(superseded)
	}{
		{"sent", sent, true, true},
		{"rejected after the send", rejected, false, false},
		{"bounced for good after the send", bounced, false, false},
		{"bounced, resends spent", softOut, false, false},
		{"complained", complained, true, true},
		{"same diff", delivery.Row{Status: delivery.StatusSkippedSameDiff}, true, true},
		{"superseded", delivery.Row{Status: delivery.StatusSuperseded}, false, true},
		{"digested", delivery.Row{Status: delivery.StatusDigested}, false, true},
		{"pending", delivery.Row{Status: delivery.StatusPending}, false, false},
	} {
		if got := c.r.Reached(); got != c.reached {
			t.Errorf("%s: Reached %v, want %v", c.name, got, c.reached)
		}
		for _, st := range delivery.QuietStatuses() {
			want := c.reached || (st == delivery.StatusSuperseded && c.superseded)
			if got := c.r.Carries(st); got != want {
				t.Errorf("%s: Carries(%s) %v, want %v", c.name, st, got, want)
			}
		}
	}
}
