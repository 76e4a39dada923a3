package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Regression: Claim's condition ignored provider evidence, so a Send event
// recorded after a row was released for a resend (or while the send-rate
// limiter waited) did not stop the claim, and the row was sent again.
// Evidence of any kind on the row now refuses the claim.
// Rules: R-OUTBOX-3.
func TestClaim_RefusesARowWithProviderEvidence(t *testing.T) {
	now := time.Now()
	d := newDeliveries(t, func() time.Time { return now })
	ctx := context.Background()
	for _, typ := range []string{"Send", "Delivery", "Bounce", "Reject"} {
		id := "d_ev_" + typ
		if _, _, err := d.Ensure(ctx, newRow(id)); err != nil {
			t.Fatal(err)
		}
		// A send whose answer was lost, released because the evidence path
		// had caught up past it ...
		if _, err := d.Claim(ctx, id, "t1", time.Second); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Second)
		if _, err := d.Requeue(ctx, id, "AWAITING_EVIDENCE"); err != nil {
			t.Fatal(err)
		}
		// ... then its event arrives, very late.
		ev := store.Event{Type: typ, MessageID: "ses-late", At: now}
		if typ == "Bounce" {
			ev.BounceType = "Permanent"
		}
		if _, _, err := d.RecordEvent(ctx, id, ev); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Claim(ctx, id, "t2", time.Minute); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s event on the row: claim = %v, want ErrConflict", typ, err)
		}
		r, _ := d.Get(ctx, id)
		if delivery.Decide(r, now) != delivery.Reconcile || delivery.Settle(r, delivery.Evidence{}) != delivery.Backfill {
			t.Errorf("%s event: decide %v, settle %v; want reconcile → backfill", typ, delivery.Decide(r, now), delivery.Settle(r, delivery.Evidence{}))
		}
	}
}

// The SDK retries conditional writes; when the first try applied and only
// its answer was lost, the retry fails its condition on the write itself.
// Claim, MarkSent and Release recognise their own write.
// Rules: R-OUTBOX-7.
func TestOutboxWrites_RecogniseTheirOwnAppliedWrite(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_own")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_own", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err := d.Claim(ctx, "d_own", "tok", time.Minute) // the SDK's retry
	if err != nil || r.ClaimToken != "tok" {
		t.Fatalf("retried claim: %+v %v; want the row, claimed by us", r, err)
	}
	if _, err := d.Claim(ctx, "d_own", "other", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another worker's claim: %v, want ErrConflict", err)
	}
	if _, err := d.MarkSent(ctx, "d_own", "tok", "ses-1"); err != nil {
		t.Fatal(err)
	}
	r, err = d.MarkSent(ctx, "d_own", "tok", "ses-1") // the SDK's retry
	if err != nil || r.NotificationID != "ses-1" {
		t.Fatalf("retried mark: %+v %v; want the row marked", r, err)
	}
	if _, err := d.MarkSent(ctx, "d_own", "tok", "ses-2"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a mark with another message id: %v, want ErrConflict", err)
	}
}

// Regression: an event whose message id is not the row's (proof that the
// row was sent twice) was stored as evidence silently. It is now never
// evidence for the row, kept in duplicate_message_ids and reported once.
// Rules: R-EVIDENCE-1.
func TestRecordEvent_AnotherMessagesEventIsADuplicate(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_dup")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_dup", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "d_dup", "tok", "ses-1"); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	if _, out, err := d.RecordEvent(ctx, "d_dup", store.Event{Type: "Send", MessageID: "ses-1", At: at}); err != nil || out != store.EventRecorded {
		t.Fatalf("the row's own Send: %v %v", out, err)
	}
	r, out, err := d.RecordEvent(ctx, "d_dup", store.Event{Type: "Send", MessageID: "ses-2", At: at.Add(time.Second)})
	if err != nil || out != store.EventDuplicate {
		t.Fatalf("another message's Send: %v %v; want EventDuplicate", out, err)
	}
	if r.ProviderMessageID != "ses-1" || len(r.DuplicateMessageIDs) != 1 || r.DuplicateMessageIDs[0] != "ses-2" {
		t.Fatalf("row after the duplicate: provider %q duplicates %v", r.ProviderMessageID, r.DuplicateMessageIDs)
	}
	if _, out, _ := d.RecordEvent(ctx, "d_dup", store.Event{Type: "Delivery", MessageID: "ses-2", At: at}); out != store.EventIgnored {
		t.Fatalf("a second event of the same duplicate: %v, want EventIgnored (counted once)", out)
	}
	r, _ = d.Get(ctx, "d_dup")
	if r.Status != delivery.StatusSent || !r.DeliveredAt.IsZero() {
		t.Fatalf("the duplicate's Delivery event was taken as the row's: %s delivered %v", r.Status, r.DeliveredAt)
	}
}

// Regression: a transient bounce on a row still in `sending` (a send whose
// answer was lost) was recorded as plain evidence, the row backfilled as
// sent and the job succeeded, though the reader never got the email. The
// bounce now returns the row to failed_transient, once its lease expired.
// Rules: R-EVIDENCE-5.
func TestResendAfterNotDelivered_ARowStillSending(t *testing.T) {
	now := time.Now()
	d := newDeliveries(t, func() time.Time { return now })
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_sb")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_sb", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ResendAfterNotDelivered(ctx, "d_sb", "ses-1", "TRANSIENT_BOUNCE", now, 2); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("under a live lease: %v, want ErrConflict (the send in flight settles first)", err)
	}
	now = now.Add(2 * time.Minute)
	r, err := d.ResendAfterNotDelivered(ctx, "d_sb", "ses-1", "TRANSIENT_BOUNCE", now, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.StatusFailedTransient || r.HasEvidence() || !r.Bounced("ses-1") || delivery.Decide(r, now) != delivery.Claim {
		t.Fatalf("after the bounce: %+v; want failed_transient, claimable, ses-1 bounced", r)
	}
	// The bounced send's late Send event is not evidence for the resend.
	if _, out, _ := d.RecordEvent(ctx, "d_sb", store.Event{Type: "Send", MessageID: "ses-1", At: now}); out != store.EventStale {
		t.Fatalf("late Send of the bounced message: %v, want EventStale", out)
	}
}

// A row marked sent that the evidence path never confirmed (reconciling)
// is an operator's: resolved as sent, or cleared and requeued
// (R-RECON-2) — never while provider evidence names it.
func TestOperatorVerdicts_OnHeldRows(t *testing.T) {
	now := time.Now()
	d := newDeliveries(t, func() time.Time { return now })
	ctx := context.Background()
	mark := func(id string) {
		t.Helper()
		if _, _, err := d.Ensure(ctx, newRow(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Claim(ctx, id, "tok", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := d.MarkSent(ctx, id, "tok", "ses-"+id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.MarkReconciling(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mark("d_r1")
	r, err := d.ClearAndRequeue(ctx, "d_r1")
	if err != nil || r.Status != delivery.StatusFailedTransient || !r.NotifiedAt.IsZero() || r.NotificationID != "" || delivery.Decide(r, now) != delivery.Claim {
		t.Fatalf("requeue: %+v %v", r, err)
	}
	mark("d_r2")
	if r, err = d.ResolveSent(ctx, "d_r2"); err != nil || r.Status != delivery.StatusSent || r.NotificationID != "ses-d_r2" {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	if _, err := d.ClearAndRequeue(ctx, "d_r2"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue of a sent row: %v, want ErrConflict", err)
	}
	// A held `sending` row, past its lease: resolvable; under a live lease: not.
	if _, _, err := d.Ensure(ctx, newRow("d_r3")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_r3", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ResolveSent(ctx, "d_r3"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("resolve under a live lease: %v, want ErrConflict", err)
	}
	now = now.Add(2 * time.Minute)
	if r, err = d.ResolveSent(ctx, "d_r3"); err != nil || r.NotifiedAt.IsZero() || delivery.Decide(r, now) != delivery.Skip {
		t.Fatalf("resolve a held sending row: %+v %v", r, err)
	}
}

// The watermark moves forward only, and never past an event the feedback
// function has received but not recorded.
// Rules: R-EVIDENCE-2.
func TestEvidence_WatermarkHeldBackByPendingEvents(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := store.NewEvidence(env.Clients.DynamoDB, res.JobsTable, func() time.Time { return now })
	ctx := context.Background()
	if wm, err := e.Watermark(ctx, "set"); err != nil || !wm.IsZero() {
		t.Fatalf("no event yet: %v %v", wm, err)
	}
	t1, t2 := now.Add(-time.Minute), now.Add(-30*time.Second)
	if err := e.Advance(ctx, "set", t2); err != nil {
		t.Fatal(err)
	}
	if err := e.Advance(ctx, "set", t1); err != nil { // an older event, later
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Equal(t2) {
		t.Fatalf("watermark %v, want %v (forward only)", wm, t2)
	}
	if err := e.HoldBack(ctx, "set", map[string]time.Time{"m-1": t1, "m-2": t2}); err != nil {
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Before(t1) {
		t.Fatalf("watermark %v with an event of %v pending; want before it", wm, t1)
	}
	if err := e.Release(ctx, "set", []string{"m-1", "m-2"}); err != nil {
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Equal(t2) {
		t.Fatalf("watermark %v after the release, want %v", wm, t2)
	}
	if wm, _ := e.Watermark(ctx, "other-set"); !wm.IsZero() {
		t.Fatal("configuration sets share a watermark")
	}
	// One probe per need (a notifier probes once now is past need);
	// another once the last is older than every.
	need := now.Add(-time.Second)
	if ok, err := e.ClaimProbe(ctx, "set", need, time.Minute); err != nil || !ok {
		t.Fatalf("first probe: %v %v", ok, err)
	}
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
		t.Fatal("a second probe for the same need")
	}
	now = now.Add(2 * time.Minute)
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); !ok {
		t.Fatal("no new probe after the last one's events never came")
	}
	if err := e.Advance(ctx, "set", need); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
		t.Fatal("a probe although the watermark is past need")
	}
}
