package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// Reject settles a row whose message SES rejected (R-EVIDENCE-8): the row
// is failed permanently with class REJECTED, the Reject and the message id
// recorded as its evidence, out of the live index; it is never sent
// again (delivery.Decide holds a failed row for a person). It applies
// only when providerMessageID is the row's send: the message it was marked
// sent with, or, for a send whose answer was lost, the one its evidence
// names (or none yet). A repeat of the same Reject applies again, so a
// retried event finishes its work. ErrConflict: the Reject is of another
// send of the row; ErrNotFound: there is no row.
func (s *Deliveries) Reject(ctx context.Context, id, providerMessageID string, at time.Time) (delivery.Row, error) {
	msg := expression.Value(providerMessageID)
	upd := setStatus(delivery.StatusFailedPermanent).
		Set(expression.Name(attrLastErrorClass), expression.Value(store.RejectedClass)).
		Set(expression.Name(attrEvidenceRejectAt), expression.IfNotExists(expression.Name(attrEvidenceRejectAt), expression.Value(ts(at)))).
		Set(expression.Name(attrProviderMessageID), expression.IfNotExists(expression.Name(attrProviderMessageID), msg)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))
	upd = sweepRowOut(dropClaim(upd))
	marked := expression.Name(attrNotificationID).Equal(msg)
	lostAnswer := notSet(attrNotificationID).
		And(expression.Or(statusIs(delivery.StatusSending), statusIs(delivery.StatusFailedPermanent))).
		And(notSetOrEqual(attrProviderMessageID, msg))
	row, err := s.updateReturn(ctx, id, upd, rowExists().And(expression.Or(marked, lostAnswer)))
	if err != nil {
		if _, gerr := s.Get(ctx, id); gerr != nil {
			return delivery.Row{}, gerr
		}
	}
	return row, err
}
