package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
)

// The send's own writes (R-OUTBOX-4): claim the row, then after the
// provider's answer mark it sent or release it; or settle a row that must
// not be sent at all (Skip).

// Claim takes a claimable row for sending in one conditional write: status
// pending or failed_transient → sending, attempts incremented, a lease and a
// claim token set; and only while neither notified_at nor notification_id is
// set (R-OUTBOX-3: "safe to attempt send" only then) and no provider
// evidence names the row: an event recorded since the row was read (a send
// thought lost that showed up after all) settles it instead. The returned
// row is the state after the claim (ALL_NEW): the authoritative re-read
// before send. ErrConflict means the row was not claimable.
//
// The SDK retries UpdateItem: when the claim was written but its answer
// lost, the retry fails the condition on our own write. A conflict is
// therefore read back, and a row that holds our token is ours.
func (s *Deliveries) Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error) {
	now := s.now().UTC()
	upd := sweepRowIn(setStatus(delivery.StatusSending)).
		Add(expression.Name(attrAttempts), expression.Value(1)).
		Set(expression.Name(attrLeaseUntil), expression.Value(ts(now.Add(lease)))).
		Set(expression.Name(attrClaimToken), expression.Value(token)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(now)))
	cond := claimableStatus().And(neverSent())
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == delivery.StatusSending && r.ClaimToken == token
	})
}

// MarkSent is step 3 of R-OUTBOX-4: after the provider accepted the send,
// one write sets notification_id, notified_at and status=sent, on condition
// that this worker's claim still holds. A retried write whose first try
// applied is recognised by the message id (see Claim).
func (s *Deliveries) MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error) {
	now := ts(s.now())
	upd := dropClaim(setStatus(delivery.StatusSent).
		Set(expression.Name(attrNotificationID), expression.Value(notificationID)).
		Set(expression.Name(attrNotifiedAt), expression.Value(now)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now))).
		Remove(expression.Name(attrLastErrorClass))
	row, err := s.updateReturn(ctx, id, upd, claimHeld(token))
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.NotificationID == notificationID })
}

// Release records a failed send under this worker's claim: failed_transient
// (claim again later) or failed_permanent (operator), with the error class.
func (s *Deliveries) Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error) {
	now := ts(s.now())
	upd := sweepRowOut(dropClaim(setStatus(status).
		Set(expression.Name(attrLastErrorClass), expression.Value(errorClass)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now))))
	row, err := s.updateReturn(ctx, id, upd, claimHeld(token))
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == status && r.ClaimToken == "" && r.LastErrorClass == errorClass
	})
}

// Skip settles a row that was never sent as terminal without a send
// (suppressed or skipped_unsubscribed): only while it is claimable and
// carries no sign of a send (no notification id, no notified_at, no provider
// evidence), so a row in flight is never relabelled.
func (s *Deliveries) Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error) {
	upd := setStatus(status).
		Set(expression.Name(attrSkipReason), expression.Value(reason)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))
	return s.updateReturn(ctx, id, upd, claimableStatus().And(neverSent()))
}
