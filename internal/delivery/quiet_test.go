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
		if want := st != delivery.StatusSuperseded; r.HasContent() != want {
			t.Errorf("%s: HasContent %v, want %v", st, r.HasContent(), want)
		}
	}
	if !(delivery.Row{Status: delivery.StatusPending}).Unsent() || (delivery.Row{Status: delivery.StatusSending}).Unsent() ||
		(delivery.Row{Status: delivery.StatusFailedTransient, NotificationID: "m"}).Unsent() {
		t.Error("Unsent: only a claimable row with no sign of a send")
	}
	if !(delivery.Row{Status: delivery.StatusSent, NotifiedAt: now}).HasContent() || (delivery.Row{Status: delivery.StatusPending}).HasContent() {
		t.Error("HasContent: a sent row has it, a pending one not")
	}
}
