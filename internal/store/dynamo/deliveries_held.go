package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// A send whose answer was lost is held in `sending` until provider
// evidence decides it: the notifier notes it waits (Awaiting), then marks
// it sent from the evidence (Backfill) or, once the evidence path has
// caught up past it with no event naming it, sends again (Requeue).

// Backfill marks a row sent from provider evidence, without a send: the
// recovery of R-OUTBOX-6 ("if found delivered, backfill notification_id
// and notified_at without resending"). It applies only while notified_at is
// unset.
func (s *Deliveries) Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error) {
	now := ts(s.now())
	upd := remove(dropClaim(setStatus(delivery.StatusSent).
		Set(expression.Name(attrNotificationID), expression.Value(notificationID)).
		Set(expression.Name(attrNotifiedAt), expression.Value(at.UTC().Format(time.RFC3339Nano))).
		Set(expression.Name(attrUpdatedAt), expression.Value(now))),
		attrLastErrorClass, schema.Sweep)
	cond := notSet(attrNotifiedAt).And(rowExists())
	return s.updateReturn(ctx, id, upd, cond)
}

// Requeue returns a row whose send provably did not happen to
// failed_transient so it can be claimed again: the evidence path has
// caught up past the send and no event names the row (delivery.Settle).
// It applies only to a row still in `sending` past its lease, with no
// provider evidence and no sign of a send (notified_at, notification_id),
// and counts the resend on the row (resent_without_evidence).
func (s *Deliveries) Requeue(ctx context.Context, id string, errorClass string) (delivery.Row, error) {
	now := ts(s.now())
	upd := remove(dropClaim(setStatus(delivery.StatusFailedTransient).
		Set(expression.Name(attrLastErrorClass), expression.Value(errorClass)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Add(expression.Name(attrResentWithoutEvidence), expression.Value(1))),
		attrEvidenceCheckedAt, schema.Sweep)
	cond := statusIs(delivery.StatusSending).And(leaseExpired(now)).And(neverSent())
	return s.updateReturn(ctx, id, upd, cond)
}

// Awaiting notes that a notifier looked at a row held for provider
// evidence (a send whose answer was lost), so the sweeper leaves it to the
// notifier that is already waiting on it (delivery.Row.EvidenceCheckedAt).
func (s *Deliveries) Awaiting(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name(attrEvidenceCheckedAt), expression.Value(now)).
		Set(expression.Name(attrLastErrorClass), expression.Value("AWAITING_EVIDENCE"))
	return s.updateReturn(ctx, id, upd, statusIs(delivery.StatusSending))
}
