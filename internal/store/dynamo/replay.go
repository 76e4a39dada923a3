package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Replays implements Replays on the jobs table. Each record is one item whose
// conditional write decides, so concurrent replays of one delivery claim
// it once, and concurrent events of one version schedule one refresh.
type Replays struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

var _ store.Replays = (*Replays)(nil)

// NewReplays returns the replay records on the jobs table.
func NewReplays(db *dynamodb.Client, table string, now store.Clock) *Replays {
	if now == nil {
		now = time.Now
	}
	return &Replays{db: db, table: table, now: now}
}

func reviewerDeliveryKey(k store.ReplayKey) map[string]types.AttributeValue {
	if k.Body {
		// Already a digest, of fixed length.
		return map[string]types.AttributeValue{"pk": str(schema.PrefixReviewerBody + k.Source + "#" + k.ID)}
	}
	// The id is the source's, bounded by the webhook parsers (printable,
	// at most 200 bytes); hashed all the same so the key stays short.
	return map[string]types.AttributeValue{"pk": str(schema.PrefixReviewerDelivery + k.Source + "#" + job.Hash(k.Source, k.ID))}
}

func refreshKey(id job.ID) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixRefresh + string(id))}
}

// ClaimDelivery implements Replays. The item holds when the delivery
// was claimed, whether it was handled, and its TTL; the condition lets a
// claim through when there is no item, when the item's window has passed
// (TTL deletes lazily), or when an unhandled claim is older than lease (its
// intake died).
func (s *Replays) ClaimDelivery(ctx context.Context, k store.ReplayKey, window, lease time.Duration) (bool, error) {
	now := s.now().UTC()
	upd := expression.Set(expression.Name("kind"), expression.Value("reviewer_delivery")).
		Set(expression.Name("claimed_at"), expression.Value(now.UnixMilli())).
		Set(expression.Name("expires_at"), expression.Value(now.Add(window).Unix())).
		Remove(expression.Name("handled"))
	cond := expression.AttributeNotExists(expression.Name("pk")).
		Or(expression.Name("expires_at").LessThan(expression.Value(now.Unix()))).
		Or(expression.AttributeNotExists(expression.Name("handled")).
			And(expression.Name("claimed_at").LessThan(expression.Value(now.Add(-lease).UnixMilli()))))
	ok, err := s.claim(ctx, reviewerDeliveryKey(k), upd, cond)
	if err != nil {
		return false, fmt.Errorf("claim reviewer delivery: %w", err)
	}
	return ok, nil
}

// claim runs one conditional UpdateItem that also writes a token of its
// own, and reports whether this call's write is the item's. The SDK
// retries a write whose answer was lost; the retry then fails the
// condition against the first attempt's write, and the token, read back
// from the failed condition, shows the write was ours all the same.
func (s *Replays) claim(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (bool, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, err
	}
	token := hex.EncodeToString(b[:])
	e, err := expression.NewBuilder().WithUpdate(upd.Set(expression.Name("token"), expression.Value(token))).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("build update: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: key,
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		t, ok := ccf.Item["token"].(*types.AttributeValueMemberS)
		return ok && t.Value == token, nil
	}
	return err == nil, err
}

// CompleteDelivery implements Replays.
func (s *Replays) CompleteDelivery(ctx context.Context, k store.ReplayKey) error {
	upd := expression.Set(expression.Name("handled"), expression.Value(true))
	_, err := conditionalUpdate(ctx, s.db, s.table, reviewerDeliveryKey(k), upd,
		expression.AttributeExists(expression.Name("pk")), types.ReturnValueNone)
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("complete reviewer delivery: %w", err)
	}
	return nil
}

// ReleaseDelivery implements Replays.
func (s *Replays) ReleaseDelivery(ctx context.Context, k store.ReplayKey) error {
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: reviewerDeliveryKey(k)}); err != nil {
		return fmt.Errorf("release reviewer delivery: %w", err)
	}
	return nil
}

// ScheduleRefresh implements Replays: the item's due time is when the
// scheduled refresh runs; a new one is scheduled only once that has
// passed.
func (s *Replays) ScheduleRefresh(ctx context.Context, id job.ID, window time.Duration) (bool, error) {
	now := s.now().UTC()
	due := now.Add(window)
	upd := expression.Set(expression.Name("kind"), expression.Value("refresh")).
		Set(expression.Name("due_at"), expression.Value(due.UnixMilli())).
		Set(expression.Name("expires_at"), expression.Value(due.Add(time.Hour).Unix()))
	cond := expression.AttributeNotExists(expression.Name("pk")).
		Or(expression.Name("due_at").LessThanEqual(expression.Value(now.UnixMilli())))
	ok, err := s.claim(ctx, refreshKey(id), upd, cond)
	if err != nil {
		return false, fmt.Errorf("schedule reviewer refresh: %w", err)
	}
	return ok, nil
}

// CancelRefresh implements Replays.
func (s *Replays) CancelRefresh(ctx context.Context, id job.ID) error {
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: refreshKey(id)}); err != nil {
		return fmt.Errorf("cancel reviewer refresh: %w", err)
	}
	return nil
}
