// Package storetest is the store's conformance suites: one set of tests
// run against every implementation of store.Deliveries (DynamoDB Local in
// package store, the in-memory one in package memstore), the way a
// driver suite is run against every driver, so the fake the protocols'
// unit tests use behaves as the real store does (R-STORE-1).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// Opener opens an empty outbox for one test, with clock now (time.Now if
// nil).
type Opener func(t *testing.T, now store.Clock) store.Deliveries

// NewRow is a pending row with a rendered message.
func NewRow(id string) delivery.Row {
	now := time.Now().UTC()
	return delivery.Row{ID: id, JobID: "j_x", ChangelistKey: "generic:cl", Recipient: "r@example.com", ReviewVersion: 1,
		Status: delivery.StatusPending, Message: delivery.Message{Subject: "s", HTML: "<p>h</p>", Text: "t", TemplateVersion: "v", ContentSHA256: "c"},
		CreatedAt: now, UpdatedAt: now}
}

// Deliveries runs the suite against the outboxes open returns: each case,
// by name, on an outbox of its own.
func Deliveries(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"Ensure_ExistingRowReturnedUnchanged", ensureExistingRowReturnedUnchanged},
		{"Claim_ExactlyOneConcurrentWorkerWins", claimExactlyOneConcurrentWorkerWins},
		{"MarkSent_OneWriteUnderOwnClaim_ThenNeverClaimable", markSentOneWriteUnderOwnClaimThenNeverClaimable},
		{"Requeue_OnlyAfterLeaseExpired", requeueOnlyAfterLeaseExpired},
		{"ResendAfterNotDelivered_OnlyLatestSend_LateEventsOfBouncedMessageIgnored", resendAfterNotDeliveredOnlyLatestSendLateEventsOfBouncedMessageIgnored},
		{"Claim_RefusesARowWithProviderEvidence", claimRefusesARowWithProviderEvidence},
		{"DeliveryWrites_RecogniseTheirOwnAppliedWrite", deliveryWritesRecogniseTheirOwnAppliedWrite},
		{"RecordEvent_AnotherMessagesEventIsADuplicate", recordEventAnotherMessagesEventIsADuplicate},
		{"ResendAfterNotDelivered_ARowStillSending", resendAfterNotDeliveredARowStillSending},
		{"OperatorVerdicts_OnHeldRows", operatorVerdictsOnHeldRows},
		{"Skip_Backfill_Awaiting_MarkReconciling_GetMany_Events", skipBackfillAwaitingMarkReconcilingGetManyEvents},
		{"Unsettled_SelectsWhatMayNeedAHand", unsettledSelectsWhatMayNeedAHand},
		{"ResolvedAsSent_NeverReconciledAgain", resolvedAsSentNeverReconciledAgain},
		{"Reject_OnlyTheRowsSend_FailedForGood", rejectOnlyTheRowsSendFailedForGood},
		{"SkippedDomain_TerminalNeverClaimed", skippedDomainTerminalNeverClaimed},
		{"SettleQuiet_StandsOnlyOnARowThatReached", settleQuietStandsOnlyOnARowThatReached},
		{"Revive_OnlyARowStandingOnTheUndoneOne", reviveOnlyARowStandingOnTheUndoneOne},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// R-OUTBOX-1: "Persist an outbox/delivery-log row per recipient keyed by
// that tuple." A second Ensure returns the stored row unchanged, so the
// rendered message is never replaced.
// Rules: R-OUTBOX-2.
func ensureExistingRowReturnedUnchanged(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	r := NewRow("d_1")
	if _, created, err := d.Ensure(ctx, r); err != nil || !created {
		t.Fatalf("first ensure: created=%v err=%v", created, err)
	}
	other := r
	other.Message.HTML = "<p>changed</p>"
	got, created, err := d.Ensure(ctx, other)
	if err != nil || created || got.Message.HTML != "<p>h</p>" {
		t.Fatalf("second ensure: created=%v html=%q err=%v", created, got.Message.HTML, err)
	}
}

// the atomic claim (R-OUTBOX-3): of many workers claiming one row at once, exactly
// one wins; the claim increments attempts in the same write.
func claimExactlyOneConcurrentWorkerWins(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_2")); err != nil {
		t.Fatal(err)
	}
	const n = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.Claim(ctx, "d_2", fmt.Sprintf("tok%d", i), time.Minute)
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.Is(err, store.ErrConflict):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d claims won, want 1", wins)
	}
	r, _ := d.Get(ctx, "d_2")
	if r.Status != delivery.StatusSending || r.Attempts != 1 || r.LeaseUntil.IsZero() {
		t.Fatalf("row after claim: %+v", r)
	}
}

// R-OUTBOX-4: "Persist DB update in a single write: set
// notification_id, set notified_at = now(), and mark delivery status sent" —
// only under the worker's own claim; and a sent row can never be claimed
// again ("If notified_at is set, do not send again").
func markSentOneWriteUnderOwnClaimThenNeverClaimable(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_3")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_3", "mine", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "d_3", "not-mine", "ses-1"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("mark under another token: %v, want ErrConflict", err)
	}
	// Nor does anyone but the claimant release it: a stale notifier's
	// release would hand a row being sent to the next claim.
	if _, err := d.Release(ctx, "d_3", "not-mine", delivery.StatusFailedTransient, "RATE_LIMITED"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("release under another token: %v, want ErrConflict", err)
	}
	if r, err := d.Get(ctx, "d_3"); err != nil || r.Status != delivery.StatusSending || r.ClaimToken != "mine" {
		t.Fatalf("row after a release under another token: %+v %v, want sending under our claim", r, err)
	}
	r, err := d.MarkSent(ctx, "d_3", "mine", "ses-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.StatusSent || r.NotificationID != "ses-1" || r.NotifiedAt.IsZero() || r.ClaimToken != "" {
		t.Fatalf("row after mark: %+v", r)
	}
	if _, err := d.Claim(ctx, "d_3", "again", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("claim of a sent row: %v, want ErrConflict", err)
	}
	if delivery.Decide(r, time.Now()) != delivery.Skip {
		t.Fatal("a sent row must be skipped")
	}
}

// R-OUTBOX-6: a row whose send may have happened is only returned to
// sending after its lease expired; never while a worker holds it, and never
// once notified_at is set.
func requeueOnlyAfterLeaseExpired(t *testing.T, open Opener) {
	now := time.Now()
	clock := func() time.Time { return now }
	d := open(t, clock)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_4")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_4", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Requeue(ctx, "d_4", "IN_FLIGHT"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue under a live lease: %v, want ErrConflict", err)
	}
	now = now.Add(2 * time.Minute)
	r, err := d.Requeue(ctx, "d_4", "IN_FLIGHT")
	if err != nil || r.Status != delivery.StatusFailedTransient {
		t.Fatalf("requeue after the lease: %+v %v", r, err)
	}
	if _, err := d.Backfill(ctx, "d_4", "ses-9", now); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Requeue(ctx, "d_4", "IN_FLIGHT"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue of a backfilled row: %v, want ErrConflict", err)
	}
}

// R-EVIDENCE-5: a transient bounce makes the row failed_transient again
// ("isPermanentBounce ? 'suppressed' : 'failed_transient'"). Only a bounce
// of the row's latest send does so, at most max times; and a late Send or
// Delivery event of the bounced message (SNS keeps no order) is not
// evidence for the resend, which would otherwise be backfilled as sent
// without a copy reaching the reader.
func resendAfterNotDeliveredOnlyLatestSendLateEventsOfBouncedMessageIgnored(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_b1")); err != nil {
		t.Fatal(err)
	}
	send := func(token, msgID string) {
		t.Helper()
		if _, err := d.Claim(ctx, "d_b1", token, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := d.MarkSent(ctx, "d_b1", token, msgID); err != nil {
			t.Fatal(err)
		}
	}
	send("t1", "ses-1")
	at := time.Now().UTC()
	if _, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-other", "TRANSIENT_BOUNCE", at, 2); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a bounce of another message: %v, want ErrConflict", err)
	}
	r, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-1", "TRANSIENT_BOUNCE", at, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.StatusFailedTransient || !r.NotifiedAt.IsZero() || r.NotificationID != "" || r.BounceResends != 1 || r.HasEvidence() {
		t.Fatalf("after the bounce: %+v", r)
	}
	// A late Delivery of the bounced message: ignored.
	r, _, err = d.RecordEvent(ctx, "d_b1", store.Event{Type: "Delivery", MessageID: "ses-1", At: at})
	if err != nil || r.HasEvidence() || delivery.Decide(r, time.Now()) != delivery.Claim {
		t.Fatalf("late delivery of the bounced message: %+v (%v); want it ignored and the row claimable", r, err)
	}
	send("t2", "ses-2")
	if r, _, _ = d.RecordEvent(ctx, "d_b1", store.Event{Type: "Delivery", MessageID: "ses-2", At: at}); r.Status != delivery.StatusDelivered {
		t.Fatalf("delivery of the resend: %q, want delivered", r.Status)
	}
	if _, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-2", "TRANSIENT_BOUNCE", at, 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a bounce over the cap: %v, want ErrConflict", err)
	}
	if _, _, err := d.RecordEvent(ctx, "d_unknown", store.Event{Type: "Send", MessageID: "x", At: at}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("event for an unknown row: %v, want ErrNotFound", err)
	}
}

// Regression: Claim's condition ignored provider evidence, so a Send event
// recorded after a row was released for a resend (or while the send-rate
// limiter waited) did not stop the claim, and the row was sent again.
// Evidence of any kind on the row now refuses the claim.
// Rules: R-OUTBOX-3.
func claimRefusesARowWithProviderEvidence(t *testing.T, open Opener) {
	now := time.Now()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	for _, typ := range []string{"Send", "Delivery", "Bounce", "Reject"} {
		id := "d_ev_" + typ
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
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
func deliveryWritesRecogniseTheirOwnAppliedWrite(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_own")); err != nil {
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
func recordEventAnotherMessagesEventIsADuplicate(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_dup")); err != nil {
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
func resendAfterNotDeliveredARowStillSending(t *testing.T, open Opener) {
	now := time.Now()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_sb")); err != nil {
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
func operatorVerdictsOnHeldRows(t *testing.T, open Opener) {
	now := time.Now()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	mark := func(id string) {
		t.Helper()
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
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
	if _, _, err := d.Ensure(ctx, NewRow("d_r3")); err != nil {
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
	// A held `sending` row that provider evidence names (its send's answer
	// was lost, its Send event came): the evidence settles it, an
	// operator's requeue is refused (R-EVIDENCE-9).
	if _, _, err := d.Ensure(ctx, NewRow("d_r4")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_r4", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordEvent(ctx, "d_r4", store.Event{Type: "Send", MessageID: "ses-lost", At: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := d.ClearAndRequeue(ctx, "d_r4"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue of a row provider evidence names: %v, want ErrConflict", err)
	}
}

// Skip settles only a claimable row with no sign of a send; Backfill
// marks a row sent from evidence once; Awaiting notes a notifier on a
// sending row; MarkReconciling takes only a sent row without a Send
// or Delivery event; GetMany keeps the order given and omits missing
// rows; events of types that are not evidence, and of rows that do
// not exist, are told apart.
func skipBackfillAwaitingMarkReconcilingGetManyEvents(t *testing.T, open Opener) {
	now := time.Now().UTC()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	for _, id := range []string{"d_skip", "d_fill", "d_wait", "d_rec"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := d.Skip(ctx, "d_skip", delivery.StatusSkippedUnsubscribed, "repo"); err != nil || r.Status != delivery.StatusSkippedUnsubscribed || r.SkipReason != "repo" {
		t.Fatalf("skip: %+v %v", r, err)
	}
	if _, err := d.Skip(ctx, "d_skip", delivery.StatusSuppressed, "again"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("skip of a settled row: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "d_fill", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Skip(ctx, "d_fill", delivery.StatusSuppressed, "x"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("skip of a row in flight: %v, want ErrConflict", err)
	}
	at := now.Add(-time.Second)
	if r, err := d.Backfill(ctx, "d_fill", "ses-9", at); err != nil || r.Status != delivery.StatusSent || r.NotificationID != "ses-9" || !r.NotifiedAt.Equal(at) || r.ClaimToken != "" {
		t.Fatalf("backfill: %+v %v", r, err)
	}
	if _, err := d.Backfill(ctx, "d_fill", "ses-10", now); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second backfill: %v, want ErrConflict", err)
	}
	if _, err := d.Awaiting(ctx, "d_wait"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("awaiting on a pending row: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "d_wait", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := d.Awaiting(ctx, "d_wait"); err != nil || !r.EvidenceCheckedAt.Equal(now) || r.LastErrorClass != "AWAITING_EVIDENCE" {
		t.Fatalf("awaiting: %+v %v", r, err)
	}
	if _, err := d.MarkReconciling(ctx, "d_rec"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("reconciling a pending row: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "d_rec", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "d_rec", "t", "ses-r"); err != nil {
		t.Fatal(err)
	}
	if r, err := d.MarkReconciling(ctx, "d_rec"); err != nil || r.Status != delivery.StatusReconciling {
		t.Fatalf("reconciling: %+v %v", r, err)
	}
	// Its Send event arrives late: the provider confirms the send.
	if r, out, err := d.RecordEvent(ctx, "d_rec", store.Event{Type: "Send", MessageID: "ses-r", At: now}); err != nil || out != store.EventRecorded || r.Status != delivery.StatusSent {
		t.Fatalf("late send event: %+v %v %v", r, out, err)
	}
	// A row the provider confirmed is never taken for an ordering
	// violation again, even by a sweep that read it before the event.
	if _, err := d.MarkReconciling(ctx, "d_rec"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("reconciling a row whose Send event was recorded: %v, want ErrConflict", err)
	}
	if _, out, err := d.RecordEvent(ctx, "d_rec", store.Event{Type: "DeliveryDelay", MessageID: "ses-r", At: now}); err != nil || out != store.EventIgnored {
		t.Errorf("a delay event: %v %v, want ignored", out, err)
	}
	if _, _, err := d.RecordEvent(ctx, "d_none", store.Event{Type: "Send", MessageID: "m", At: now}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an event of no row: %v, want ErrNotFound", err)
	}
	rows, err := d.GetMany(ctx, []string{"d_rec", "d_none", "d_skip", "d_rec"})
	if err != nil || len(rows) != 2 || rows[0].ID != "d_rec" || rows[1].ID != "d_skip" {
		t.Errorf("get many: %v %v", rows, err)
	}
}

// Unsettled yields rows in flight or held, under reconciliation, and
// sent before the bound with no provider event; nothing else.
func unsettledSelectsWhatMayNeedAHand(t *testing.T, open Opener) {
	now := time.Now().UTC()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	for _, id := range []string{"u_pending", "u_sending", "u_sent_old", "u_sent_new", "u_sent_ev"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"u_sending", "u_sent_old", "u_sent_new", "u_sent_ev"} {
		if _, err := d.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.MarkSent(ctx, "u_sent_old", "t", "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "u_sent_ev", "t", "m3"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordEvent(ctx, "u_sent_ev", store.Event{Type: "Send", MessageID: "m3", At: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := d.MarkSent(ctx, "u_sent_new", "t", "m2"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	if err := d.Unsettled(ctx, now.Add(-time.Minute), func(r delivery.Row) error {
		if strings.HasPrefix(r.ID, "u_") {
			got[r.ID] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(map[string]bool{"u_sending": true, "u_sent_old": true}) {
		t.Errorf("unsettled %v, want u_sending and u_sent_old", got)
	}
}

// Regression: a row an operator resolved as sent (no provider event
// will ever name it) went back to reconciling at the next sweep, held
// again. An operator's verdict stands: the row is never reconciled
// again.
func resolvedAsSentNeverReconciledAgain(t *testing.T, open Opener) {
	now := time.Now().UTC()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow("d_resolved")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_resolved", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "d_resolved", "t", "ses-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkReconciling(ctx, "d_resolved"); err != nil {
		t.Fatal(err)
	}
	r, err := d.ResolveSent(ctx, "d_resolved")
	if err != nil || r.Status != delivery.StatusSent || r.Resolution == "" {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	if _, err := d.MarkReconciling(ctx, "d_resolved"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("reconciling a row an operator resolved: %v, want ErrConflict", err)
	}
	seen := false
	_ = d.Unsettled(ctx, now.Add(time.Hour), func(r delivery.Row) error {
		seen = seen || r.ID == "d_resolved"
		return nil
	})
	if seen {
		t.Error("a resolved row is still listed as unsettled")
	}
}

// A Reject settles the row it names for good (R-EVIDENCE-8): only for the
// row's own send — the message it was marked with, or for a send whose
// answer was lost the one its evidence names (or none yet) — it becomes
// failed_permanent REJECTED with the evidence, out of the live index; a
// repeat applies again; a Reject of another message is ErrConflict; no row
// is ErrNotFound.
// Rules: R-EVIDENCE-8.
func rejectOnlyTheRowsSendFailedForGood(t *testing.T, open Opener) {
	d := open(t, nil)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	for _, id := range []string{"r_sent", "r_lost"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Claim(ctx, id, "tok", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.MarkSent(ctx, "r_sent", "tok", "ses-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reject(ctx, "r_sent", "ses-other", at); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a Reject of another message: %v, want ErrConflict", err)
	}
	for range 2 {
		r, err := d.Reject(ctx, "r_sent", "ses-1", at)
		if err != nil || r.Status != delivery.StatusFailedPermanent || r.LastErrorClass != store.RejectedClass || !r.RejectedAt.Equal(at) {
			t.Fatalf("reject of the marked send: %s %s %v %v", r.Status, r.LastErrorClass, r.RejectedAt, err)
		}
	}
	// A send whose answer was lost: the Reject is its only evidence.
	r, err := d.Reject(ctx, "r_lost", "ses-2", at)
	if err != nil || r.Status != delivery.StatusFailedPermanent || r.ProviderMessageID != "ses-2" || r.ClaimToken != "" {
		t.Fatalf("reject of a lost answer: %s %q %q %v", r.Status, r.ProviderMessageID, r.ClaimToken, err)
	}
	if _, err := d.Reject(ctx, "r_lost", "ses-3", at); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second message's Reject of that row: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "r_lost", "tok2", time.Minute); err == nil {
		t.Fatal("a rejected row was claimed")
	}
	var live []string
	if err := d.Unsettled(ctx, at.Add(time.Hour), func(r delivery.Row) error { live = append(live, r.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(live) != 0 {
		t.Fatalf("rejected rows %v still live for the sweeps", live)
	}
	if _, err := d.Reject(ctx, "r_none", "ses-9", at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no row: %v, want ErrNotFound", err)
	}
}
