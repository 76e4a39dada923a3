package store

import (
	"context"
	"errors"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Deliveries is the delivery rows' contract: what notify, feedback, the
// sweeper and the operator do with them. dynamo.Deliveries keeps it on
// DynamoDB and memstore.Deliveries in memory; storetest.Deliveries proves
// them alike (R-STORE-1).
type Deliveries interface {
	Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error)
	Get(ctx context.Context, id string) (delivery.Row, error)
	GetMany(ctx context.Context, ids []string) ([]delivery.Row, error)
	Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error)
	MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error)
	Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error)
	Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error)
	Requeue(ctx context.Context, id string, errorClass string) (delivery.Row, error)
	Awaiting(ctx context.Context, id string) (delivery.Row, error)
	RecordEvent(ctx context.Context, id string, e Event) (delivery.Row, EventOutcome, error)
	RecordDuplicate(ctx context.Context, r delivery.Row, messageID string) (bool, error)
	Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error)
	SettleQuiet(ctx context.Context, id string, status delivery.Status, reason, on string) (delivery.Row, error)
	Revive(ctx context.Context, id, on string) (delivery.Row, error)
	ResendAfterNotDelivered(ctx context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error)
	Reject(ctx context.Context, id, providerMessageID string, at time.Time) (delivery.Row, error)
	MarkReconciling(ctx context.Context, id string) (delivery.Row, error)
	ResolveSent(ctx context.Context, id string) (delivery.Row, error)
	ClearAndRequeue(ctx context.Context, id string) (delivery.Row, error)
	Unsettled(ctx context.Context, sentBefore time.Time, fn func(delivery.Row) error) error
}

// ErrNotReached is returned when the row a quiet settlement would stand
// on no longer carries it (delivery.Row.Carries): a Reject or a bounce
// was recorded on it, or it was revived, since it was read. Nothing was
// written.
var ErrNotReached = errors.New("the row it would stand on has not reached its recipient")
