package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// verdicts makes the SES event bridge publish, for the mail of the
// delivery ids it names, SES's verdict after the Send event in place of
// the Delivery: a Reject (the content refused: SES accepted the message
// and never attempted delivery) or a permanent Bounce.
type verdicts struct {
	mu sync.Mutex
	of map[string]devstack.SESEvent // delivery id → the event instead of the Delivery
}

func (v *verdicts) set(deliveryID, typ, bounceType string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.of == nil {
		v.of = map[string]devstack.SESEvent{}
	}
	v.of[deliveryID] = devstack.SESEvent{Type: typ, BounceType: bounceType}
}

// deliver is the bridge's Deliver hook.
func (v *verdicts) deliver(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
	for _, e := range evs {
		v.mu.Lock()
		instead, ok := v.of[e.DeliveryID]
		v.mu.Unlock()
		if ok && e.Type == "Delivery" {
			e.Type, e.BounceType = instead.Type, instead.BounceType
		}
		if err := publish(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// Two pushes inside the collapse window: v2 is mailed to ann and v1 is
// settled superseded by it; SES then publishes v2's Send event and a
// Reject (its content refused after it was accepted): ann never had v2.
// The feedback function revives v1's row and hands its job back to
// notify: ann gets v1, once — the newest version she can be mailed; v2's
// content is not sent again and its job needs a person. A third push
// with the same diff is not taken for news (ann has v1's content), and
// is settled as the same diff as v1, never as the rejected v2's: no
// superseded or skipped_same_diff row stands on a rejected one.
// Rules: R-QUIET-4, R-QUIET-3, R-QUIET-1, R-EVIDENCE-8.
func TestReached_NewerRejectedAfterItsSend_ReaderGetsTheVersionSheCanBeMailed(t *testing.T) {
	t.Parallel()
	// Long enough for two webhooks on a loaded machine; the premise is
	// checked below.
	const window = 8 * time.Second
	s := startStack(t, devstack.FunctionOptions{}, quietly(window))
	ctx := context.Background()
	cl := testenv.Prefix(t)
	const ann = "ann@example.com"
	clKey := job.ChangelistKey("generic", cl)
	row := func(v int) delivery.Row {
		t.Helper()
		r, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, ann, v))
		if err != nil {
			t.Fatalf("ann's v%d row: %v", v, err)
		}
		return r
	}
	var sesSays verdicts
	sesSays.set(delivery.ID(clKey, ann, 2), "Reject", "")
	s.fns.Bridge.Deliver = sesSays.deliver
	// SES's events wait until v1 is settled: the Reject comes after v1
	// was superseded by v2, the case where a row must be revived.
	s.fns.Bridge.Pause()

	start := time.Now()
	v1 := accept(t, s, "v1-"+cl, quietSample(t, cl, 1, true, ann))
	v2 := accept(t, s, "v2-"+cl, quietSample(t, cl, 2, true, ann))
	if posted := time.Since(start); posted >= window {
		t.Fatalf("the two pushes took %s, not inside the %s window: the machine is too loaded for this test", posted, window)
	}
	s.waitJob(v1, 60*time.Second, job.StatusSucceeded)
	if r := row(1); r.Status != delivery.StatusSuperseded || r.SkipReason != "v2" {
		t.Fatalf("ann's v1 before SES's verdict: %s %q, want superseded by v2", r.Status, r.SkipReason)
	}
	if r := row(2); r.NotificationID == "" {
		t.Fatalf("ann's v2: %s, want sent", r.Status)
	}

	s.fns.Bridge.Resume() // Send, then Reject
	s.waitJob(v2, 60*time.Second, job.StatusNeedsIntervention)
	eventually(t, 60*time.Second, "ann's v1 mailed after v2 was rejected", func() bool {
		r, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, ann, 1))
		return err == nil && r.NotificationID != ""
	})
	s.waitJob(v1, 60*time.Second, job.StatusSucceeded)
	if r := row(2); r.Status != delivery.StatusFailedPermanent || r.RejectedAt.IsZero() {
		t.Errorf("ann's v2: %s, want failed_permanent with the Reject recorded", r.Status)
	}
	if r := row(1); r.Attempts != 1 || r.RevivedFrom != delivery.ID(clKey, ann, 2) {
		t.Errorf("ann's v1: %d attempts, revived from %q, want sent once, revived from v2's row", r.Attempts, r.RevivedFrom)
	}

	// v3 with the same diff: ann has it, from v1.
	v3 := accept(t, s, "v3-"+cl, quietSample(t, cl, 3, true, ann))
	s.waitJob(v3, 60*time.Second, job.StatusSucceeded)
	if r := row(3); r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v1" {
		t.Errorf("ann's v3: %s %q, want skipped_same_diff as v1 (v2 was rejected)", r.Status, r.SkipReason)
	}
	time.Sleep(time.Second) // let a wrong extra send land in the store
	per := map[int]int{}
	for _, e := range emailsFor(t, s.env.SES, cl) {
		per[versionOf(e)]++
	}
	if per[1] != 1 || per[2] != 1 || per[3] != 0 || len(per) != 2 {
		t.Errorf("ann's emails per version %v, want v2 (rejected by SES) and v1, once each", per)
	}
	for v := 1; v <= 3; v++ {
		r := row(v)
		if !r.Status.Quiet() {
			continue
		}
		on, _ := strconv.Atoi(r.SkipReason[strings.LastIndex(r.SkipReason, "v")+1:])
		if on == 2 || r.StandsOn == delivery.ID(clKey, ann, 2) {
			t.Errorf("ann's v%d is %s (%s), standing on the rejected v2", v, r.Status, r.SkipReason)
		}
	}
}
