package e2e

import (
	"context"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/wire"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// to matches an SES SendEmail to the address.
func to(addr string) func(any) bool {
	return func(in any) bool {
		e, ok := in.(*sesv2.SendEmailInput)
		return ok && e.Destination != nil && len(e.Destination.ToAddresses) == 1 && e.Destination.ToAddresses[0] == addr
	}
}

func (s *stack) row(id string) delivery.Row {
	s.t.Helper()
	r, err := s.fns.Deliveries.Get(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// outageFor is how long the evidence path is stopped. The production
// figures are a 2-minute lease and margin and a 10-minute outage; here the
// lease and margin are 1 s and 2 s and the outage 20 s by default, the
// same order. CRITICIZER_E2E_OUTAGE=10m runs it at full length.
func outageFor(t *testing.T) time.Duration {
	if v := os.Getenv("CRITICIZER_E2E_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 20 * time.Second
}

// With the SES evidence path stopped (no events reach the feedback
// function) while sends fail ambiguously — one whose answer is lost after
// SES stored it, one whose request never reached SES — nothing is resent:
// the rows are held, the job reads needs_intervention, and the sweeper
// emits HeldDeliveries and EvidenceLag, the metrics of the alarms that say
// why. When the path resumes, the first row is settled from its Send event
// without a resend, and the second (its watermark passed by an evidence
// probe) is sent once: exactly one email each, no duplicate.
// Rules: R-EVIDENCE-3, R-RECON-3, R-OUTBOX-6.
func TestEvidencePathStopped_AmbiguousSendsHeld_SettleWhenItResumes(t *testing.T) {
	t.Parallel()
	const stored, lost = "stored@example.com", "lost@example.com"
	var outage atomic.Bool
	outage.Store(true)
	inj := fault.New()
	inj.Choose(func(_ context.Context, service, operation string, in any) (fault.Rule, bool) {
		if !outage.Load() || service != "SESv2" || operation != "SendEmail" {
			return fault.Rule{}, false
		}
		switch {
		case to(stored)(in):
			return fault.Rule{Kind: fault.LoseAnswer}, true
		case to(lost)(in):
			return fault.Rule{Kind: fault.LoseRequest}, true
		}
		return fault.Rule{}, false
	})
	s := startStack(t, devstack.FunctionOptions{SweepEvery: time.Second, Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}},
		func(c *config.Config) { c.Notify.DeliveryLease, c.EvidenceMargin = time.Second, 2*time.Second })
	s.fns.Bridge.Pause()
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, stored, lost))
	clKey := job.ChangelistKey("generic", cl)
	dStored, dLost := delivery.ID(clKey, stored, 1), delivery.ID(clKey, lost, 1)

	outageLen := outageFor(t)
	end := time.Now().Add(outageLen)
	v := s.waitJob(id, 30*time.Second, job.StatusNeedsIntervention)
	for time.Now().Before(end) {
		got := perRecipient(emailsFor(t, s.env.SES, cl))
		if got[stored] != 1 || got[lost] != 0 {
			t.Fatalf("during the outage: emails %v, want 1 to %s (stored before its answer was lost) and 0 to %s", got, stored, lost)
		}
		time.Sleep(time.Second)
	}
	for _, did := range []string{dStored, dLost} {
		if r := s.row(did); r.Status != delivery.StatusSending || r.Attempts != 1 {
			t.Fatalf("row %s after the outage: %s, %d attempts; want held in sending after one attempt", did, r.Status, r.Attempts)
		}
	}
	if v.Status != job.StatusNeedsIntervention {
		t.Fatalf("job %s during the outage, want needs_intervention", v.Status)
	}
	logs := s.logText()
	if countLines(logs, `"msg":"metric"`, `"HeldDeliveries":2`) == 0 {
		t.Error("no HeldDeliveries metric counting the two held rows")
	}
	if countLines(logs, `"msg":"metric"`, `"EvidenceLag"`) == 0 || countLines(logs, `"msg":"metric"`, `"EvidenceLag":0,`) == countLines(logs, `"msg":"metric"`, `"EvidenceLag"`) {
		t.Error("no EvidenceLag metric above zero during the outage")
	}
	if n := countLines(logs, `"ResentWithoutEvidence"`) + countLines(logs, `"DuplicateSends"`); n != 0 {
		t.Errorf("%d resend or duplicate metrics during the outage, want none", n)
	}

	outage.Store(false)
	s.fns.Bridge.Resume()
	s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	time.Sleep(2 * time.Second) // a late duplicate would land now
	got := perRecipient(emailsFor(t, s.env.SES, cl))
	if got[stored] != 1 || got[lost] != 1 {
		t.Fatalf("after the outage: emails %v, want exactly one each", got)
	}
	if r := s.row(dStored); r.Attempts != 1 || r.NotificationID == "" || r.SendEventAt.IsZero() {
		t.Errorf("the stored message's row: %d attempts, notification %q; want backfilled from its Send event, never resent", r.Attempts, r.NotificationID)
	}
	if r := s.row(dLost); r.Attempts != 2 || r.ResentWithoutEvidence != 1 {
		t.Errorf("the lost request's row: %d attempts, %d resends without evidence; want resent once", r.Attempts, r.ResentWithoutEvidence)
	}
	if n := countLines(s.logText(), `"DuplicateSends"`); n != 0 {
		t.Errorf("DuplicateSends emitted %d times", n)
	}
	t.Logf("outage %s: held 2 rows, 0 resent during it; after it 1 backfilled, 1 resent once; emails %v", outageLen, got)
}

// The one window the design cannot close, shown rather than hidden: SES
// stores a message, its answer is lost, and every event of that message is
// lost too (or published later than the bound, R-EVIDENCE-7) while later
// events arrive. Then the evidence path has caught up past the send (the
// feedback queue drained) with nothing naming the row,
// and the row is sent again: ResentWithoutEvidence fires at once, and if
// the first message's events arrive after all, DuplicateSends fires and the
// row records the duplicate.
// Rules: R-OUTBOX-6, R-EVIDENCE-1.
func TestRemainingWindow_EveryEventOfALostAnswerLost_ResentAndDetected(t *testing.T) {
	t.Parallel()
	const rcpt = "window@example.com"
	inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", Match: to(rcpt), Kind: fault.LoseAnswer, Times: 1})
	var mu sync.Mutex
	var withheld []devstack.SESEvent
	cl := testenv.Prefix(t)
	did := delivery.ID(job.ChangelistKey("generic", cl), rcpt, 1)
	first := ""
	s := startStack(t, devstack.FunctionOptions{SweepEvery: time.Second, Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}},
		func(c *config.Config) { c.Notify.DeliveryLease, c.EvidenceMargin = time.Second, 2*time.Second })
	s.fns.Bridge.Deliver = func(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
		for _, e := range evs {
			mu.Lock()
			if e.DeliveryID == did && (first == "" || first == e.MessageID) {
				first = e.MessageID // the first message's events are lost
				withheld = append(withheld, e)
				mu.Unlock()
				continue
			}
			mu.Unlock()
			if err := publish(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))
	s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 2 {
		t.Fatalf("%d emails; the window this test shows is one duplicate (2 emails)", n)
	}
	if countLines(s.logText(), `"msg":"metric"`, `"ResentWithoutEvidence":1`) != 1 {
		t.Error("the resend emitted no ResentWithoutEvidence metric")
	}
	// The lost events arrive after all: the duplicate is detected.
	mu.Lock()
	late := withheld
	mu.Unlock()
	for _, e := range late {
		if err := s.fns.Bridge.Publish(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "DuplicateSends", func() bool {
		return countLines(s.logText(), `"msg":"metric"`, `"DuplicateSends":1`) == 1
	})
	if r := s.row(did); len(r.DuplicateMessageIDs) != 1 || r.DuplicateMessageIDs[0] != first {
		t.Errorf("row duplicates %v, want [%s]", r.DuplicateMessageIDs, first)
	}
}

// Reconciliation that ends: a row marked sent that the evidence path never
// confirmed (its events lost) is moved to reconciling by the sweeper once
// the path has caught up past it; its job reads needs_intervention. The
// operator lists it with the CLI and clears it for a resend with a note
// (R-RECON-2); the note is in the row's audit trail; the row is
// sent again once and the job succeeds. A note is required.
func TestOperator_ReconcilingRowRequeuedWithANote(t *testing.T) {
	t.Parallel()
	const rcpt = "unconfirmed@example.com"
	cl := testenv.Prefix(t)
	did := delivery.ID(job.ChangelistKey("generic", cl), rcpt, 1)
	var mu sync.Mutex
	first := ""
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.Notify.DeliveryLease, c.EvidenceMargin, c.Sweep.EvidenceWindow = time.Second, time.Second, time.Second
	})
	s.fns.Bridge.Deliver = func(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
		for _, e := range evs {
			mu.Lock()
			drop := e.DeliveryID == did && (first == "" || first == e.MessageID)
			if drop {
				first = e.MessageID // this row's first send is never confirmed
			}
			mu.Unlock()
			if drop {
				continue
			}
			if err := publish(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	ctx := context.Background()
	// The evidence path catches up past the send (other mail flows).
	eventually(t, 30*time.Second, "the sweeper to move the row to reconciling", func() bool {
		_ = s.fns.Evidence.Advance(ctx, "", time.Now())
		if _, err := s.fns.Sweeper.Run(ctx); err != nil {
			t.Fatal(err)
		}
		return s.row(did).Status == delivery.StatusReconciling
	})
	s.waitJob(id, 10*time.Second, job.StatusNeedsIntervention)

	out, err := s.cli("deliveries", "held")
	if err != nil || !strings.Contains(out, did) || !strings.Contains(out, "reconciling") {
		t.Fatalf("deliveries held: %v\n%s", err, out)
	}
	if out, err := s.cli("deliveries", "requeue", did); err == nil || !strings.Contains(out, "note") {
		t.Fatalf("requeue without a note: %v\n%s; want a usage error asking for a note", err, out)
	}
	if out, err := s.cli("deliveries", "requeue", did, "--note", "no copy in the recipient's mailbox (INC-7)"); err != nil {
		t.Fatalf("deliveries requeue: %v\n%s", err, out)
	}
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 2 {
		t.Fatalf("%d emails, want 2 (the unconfirmed first send, and the operator's requeue)", n)
	}
	out, err = s.cli("deliveries", "show", did)
	if err != nil || !strings.Contains(out, "INC-7") || !strings.Contains(out, `"action": "requeue"`) || !strings.Contains(out, "e2e-operator") {
		t.Fatalf("deliveries show: %v\n%s; want the note in the audit trail", err, out)
	}
	if r := s.row(did); r.Status != delivery.StatusDelivered && r.Status != delivery.StatusSent {
		t.Fatalf("row %s after the requeue, want sent", r.Status)
	}
}
