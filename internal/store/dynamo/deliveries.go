package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// Deliveries is the deliveries table: one item per (changelist, recipient, review
// version), keyed by the deterministic delivery id (R-OUTBOX-1, R-OUTBOX-1).
type Deliveries struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is how long a row is kept after it is created (DynamoDB
	// TTL on expires_at, R-COST-2); zero keeps rows forever.
	Retention time.Duration
	// messages holds the message items this instance wrote or read.
	messages *messageCache
}

// NewDeliveries returns the outbox repository for table.
func NewDeliveries(db *dynamodb.Client, table string, now store.Clock) *Deliveries {
	if now == nil {
		now = time.Now
	}
	return &Deliveries{db: db, table: table, now: now, messages: newMessageCache(messageCacheSize)}
}

func deliveryKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrDeliveryID: str(id)}
}

// Ensure creates the row if it does not exist and returns the row as stored:
// the new one, or the existing one unchanged (from ALL_OLD, no second read).
// A row is created once, with its rendered message, before any send; a retry
// never re-renders. A row created settled quietly on another
// (r.StandsOn) is created in one transaction with that row's dependents,
// as SettleQuiet: ErrNotReached when that row does not carry it.
//
// The message goes first, into its own item (putMessage): the row, once
// it exists and can be claimed, always has its message to read. A row
// created over a message item a crashed try left keeps that message.
func (s *Deliveries) Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error) {
	m, err := s.putMessage(ctx, r.ID, r.Message)
	if err != nil {
		return delivery.Row{}, false, err
	}
	r.Message = m
	item, err := marshalRow(r)
	if err != nil {
		return delivery.Row{}, false, err
	}
	s.expiresItem(item)
	if r.StandsOn != "" {
		return s.ensureStanding(ctx, r, item)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(delivery_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return r, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		old, err := s.rowOf(ctx, ccf.Item)
		if err != nil {
			return delivery.Row{}, false, err
		}
		return old, false, nil
	}
	return delivery.Row{}, false, fmt.Errorf("ensure delivery %s: %w", r.ID, err)
}

// Get reads a row with a strongly consistent read.
func (s *Deliveries) Get(ctx context.Context, id string) (delivery.Row, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: deliveryKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return delivery.Row{}, fmt.Errorf("get delivery %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return delivery.Row{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return s.rowOf(ctx, out.Item)
}

// GetMany reads rows by id (BatchGetItem, strongly consistent), in the
// order given; missing rows are omitted.
func (s *Deliveries) GetMany(ctx context.Context, ids []string) ([]delivery.Row, error) {
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, deliveryKey(id))
		}
	}
	var items []map[string]types.AttributeValue
	if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		items = append(items, item)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("get deliveries: %w", err)
	}
	found, err := s.rowsOf(ctx, items)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]delivery.Row, len(found))
	for _, r := range found {
		byID[r.ID] = r
	}
	rows := make([]delivery.Row, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			rows = append(rows, r)
			delete(byID, id)
		}
	}
	return rows, nil
}

// ours resolves a conditional write that failed its condition: when the
// row as it is now shows the write applied (an SDK retry of a write whose
// answer was lost met the write itself), it is the result; otherwise the
// conflict stands.
func (s *Deliveries) ours(ctx context.Context, id string, row delivery.Row, err error, applied func(delivery.Row) bool) (delivery.Row, error) {
	if !errors.Is(err, store.ErrConflict) {
		return row, err
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return delivery.Row{}, errors.Join(err, gerr)
	}
	if applied(cur) {
		return cur, nil
	}
	return cur, err
}

// updateReturn runs one conditional update of row id and returns the row
// as written (ALL_NEW); a failed condition is ErrConflict.
func (s *Deliveries) updateReturn(ctx context.Context, id string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (delivery.Row, error) {
	attrs, err := conditionalUpdate(ctx, s.db, s.table, deliveryKey(id), upd, cond, types.ReturnValueAllNew)
	if err != nil {
		return delivery.Row{}, fmt.Errorf("update delivery %s: %w", id, err)
	}
	return s.rowOf(ctx, attrs)
}

var _ store.Deliveries = (*Deliveries)(nil)
