package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// A row marked sent without provider evidence is moved into
// reconciliation (MarkReconciling); a held row is then settled by an
// operator's verdict: it went out (ResolveSent) or it did not
// (ClearAndRequeue).

// MarkReconciling moves a row that was marked sent but has no provider
// evidence, once the evidence path has caught up past its send, into
// reconciliation (R-RECON-1: "it MUST transition that row into a
// reconciliation workflow before any further sends"). It applies only
// while the row is still sent, still without evidence, and not resolved as
// sent by an operator.
func (s *Deliveries) MarkReconciling(ctx context.Context, id string) (delivery.Row, error) {
	upd := sweepRowIn(setStatus(delivery.StatusReconciling).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now()))))
	cond := statusIs(delivery.StatusSent).
		And(notSet(attrEvidenceSendAt)).
		And(notSet(attrEvidenceDeliveryAt)).
		And(notResolvedSent())
	return s.updateReturn(ctx, id, upd, cond)
}

// ResolveSent is an operator's verdict on a held row: the message did go
// out (the operator checked SES or asked the reader). A row under
// reconciliation returns to `sent` with its marks; a row held in `sending`
// is marked sent now, without a provider message id. Either is never sent
// again. It applies only to those two states.
func (s *Deliveries) ResolveSent(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := remove(dropClaim(setStatus(delivery.StatusSent).
		Set(expression.Name(attrNotifiedAt), expression.IfNotExists(expression.Name(attrNotifiedAt), expression.Value(now))).
		Set(expression.Name(attrResolution), expression.Value(delivery.ResolvedSent)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now))),
		attrLastErrorClass, schema.Sweep)
	return s.updateReturn(ctx, id, upd, heldForOperator(now))
}

// ClearAndRequeue is an operator's verdict on a held row: the message did
// not go out. The sent markers (notified_at, notification_id) are cleared
// and the row returns to failed_transient to be sent again — R-OUTBOX-6
// row 2. It applies only to a row under reconciliation, or held in
// `sending` past its lease, and never when provider evidence names it
// (that evidence settles the row instead).
func (s *Deliveries) ClearAndRequeue(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := remove(dropClaim(setStatus(delivery.StatusFailedTransient).
		Set(expression.Name(attrLastErrorClass), expression.Value("OPERATOR_REQUEUE")).
		Set(expression.Name(attrResolution), expression.Value(delivery.ResolvedRequeued)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now))),
		attrNotifiedAt, attrNotificationID, attrEvidenceCheckedAt, schema.Sweep)
	return s.updateReturn(ctx, id, upd, heldForOperator(now).And(noEvidence()))
}

// heldForOperator is the state an operator's verdict applies to: under
// reconciliation, or held in `sending` past its lease (now).
func heldForOperator(now string) expression.ConditionBuilder {
	return statusIn([]delivery.Status{delivery.StatusReconciling, delivery.StatusSending}).
		And(expression.Or(statusIs(delivery.StatusReconciling), leaseExpired(now)))
}

// notResolvedSent: no operator resolved the row as sent. Such a row has
// no provider event and never will; the operator's verdict stands.
func notResolvedSent() expression.ConditionBuilder {
	return expression.Or(notSet(attrResolution),
		expression.Name(attrResolution).NotEqual(expression.Value(delivery.ResolvedSent)))
}
