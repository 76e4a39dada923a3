package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Posts keeps the post rows (store.Posts) (R-CHANNEL-1) in the deliveries table,
// beside the email rows: keyed by the post's id (channel.PostID, never an
// email row's), kind "post", and in the live index under their own
// partition (sweepPost) while a sweep may need them, so the email rows'
// sweep (Unsettled) never reads one.
type Posts struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is how long a row is kept after it is created (TTL on
	// expires_at, R-COST-2); zero keeps rows forever.
	Retention time.Duration
}

// NewPosts returns the post rows' repository on the deliveries table.
func NewPosts(db *dynamodb.Client, table string, now store.Clock) *Posts {
	if now == nil {
		now = time.Now
	}
	return &Posts{db: db, table: table, now: now}
}

var _ store.Posts = (*Posts)(nil)

// sweepPost is the live index's partition of the post rows.
const sweepPost = "post"

// The post rows' own attributes (the shared ones, delivery_id, status,
// attempts, lease_until, claim_token, last_error_class, updated_at,
// expires_at, are named in deliveries_attrs.go).
const (
	attrPostKind     = "kind"
	attrPostJob      = "job_id"
	attrPostChannel  = "channel"
	attrPostPhase    = "phase"
	attrPostReceipt  = "receipt_ref"
	attrPostSentAt   = "sent_at"
	attrPostSettled  = "settle_reason"
	attrPostCreated  = "created_at"
	postKind         = "post"
	postStatusSend   = string(channel.StatusSending)
	postStatusSent   = string(channel.StatusSent)
	postStatusWait   = string(channel.StatusPending)
	postStatusSettle = string(channel.StatusSettled)
)

// postItem is a post row as stored. The post is kept as its JSON (the
// rendering the row was created with), the body as its bytes.
type postItem struct {
	ID             string    `dynamodbav:"delivery_id"`
	Kind           string    `dynamodbav:"kind"`
	JobID          string    `dynamodbav:"job_id"`
	Channel        string    `dynamodbav:"channel"`
	Phase          string    `dynamodbav:"phase"`
	Status         string    `dynamodbav:"status"`
	Post           []byte    `dynamodbav:"post,omitempty"`
	Body           []byte    `dynamodbav:"body,omitempty"`
	Attempts       int       `dynamodbav:"attempts"`
	LeaseUntil     time.Time `dynamodbav:"lease_until"`
	ClaimToken     string    `dynamodbav:"claim_token,omitempty"`
	Receipt        string    `dynamodbav:"receipt_ref,omitempty"`
	SentAt         time.Time `dynamodbav:"sent_at"`
	LastErrorClass string    `dynamodbav:"last_error_class,omitempty"`
	SettleReason   string    `dynamodbav:"settle_reason,omitempty"`
	CreatedAt      time.Time `dynamodbav:"created_at"`
	UpdatedAt      time.Time `dynamodbav:"updated_at"`
	Sweep          string    `dynamodbav:"sweep,omitempty"`
}

func (s *Posts) itemOf(r channel.Row) (map[string]types.AttributeValue, error) {
	post, err := json.Marshal(r.Post)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w", r.ID, err)
	}
	it := postItem{ID: r.ID, Kind: postKind, JobID: string(r.JobID), Channel: r.Channel, Phase: string(r.Phase),
		Status: string(r.Status), Post: post, Body: r.Body, Attempts: r.Attempts, LeaseUntil: r.LeaseUntil,
		ClaimToken: r.ClaimToken, Receipt: r.Receipt.Ref, SentAt: r.SentAt, LastErrorClass: r.LastErrorClass,
		SettleReason: r.SettleReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if !r.Status.Done() {
		it.Sweep = sweepPost
	}
	item, err := marshal(it)
	if err != nil {
		return nil, err
	}
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		item[attrExpiresAt] = &types.AttributeValueMemberN{Value: fmt.Sprint(exp)}
	}
	return item, nil
}

func postRowOf(item map[string]types.AttributeValue) (channel.Row, error) {
	var it postItem
	if err := unmarshal(item, &it); err != nil {
		return channel.Row{}, err
	}
	r := channel.Row{ID: it.ID, JobID: job.ID(it.JobID), Channel: it.Channel, Phase: channel.Phase(it.Phase),
		Status: channel.Status(it.Status), Body: it.Body, Attempts: it.Attempts, LeaseUntil: it.LeaseUntil,
		ClaimToken: it.ClaimToken, Receipt: channel.Receipt{Ref: it.Receipt}, SentAt: it.SentAt,
		LastErrorClass: it.LastErrorClass, SettleReason: it.SettleReason, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
	if len(it.Post) > 0 {
		if err := json.Unmarshal(it.Post, &r.Post); err != nil {
			return channel.Row{}, fmt.Errorf("post %s: %w", it.ID, err)
		}
	}
	return r, nil
}

// EnsurePost creates the row unless one has its id (conditional put, the
// existing row from ALL_OLD: no second read).
func (s *Posts) EnsurePost(ctx context.Context, r channel.Row) (channel.Row, bool, error) {
	now := s.now().UTC()
	r.Status, r.CreatedAt, r.UpdatedAt = channel.StatusPending, now, now
	item, err := s.itemOf(r)
	if err != nil {
		return channel.Row{}, false, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(delivery_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		made, err := postRowOf(item)
		return made, true, err
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		old, err := postRowOf(ccf.Item)
		return old, false, err
	}
	return channel.Row{}, false, fmt.Errorf("ensure post %s: %w", r.ID, err)
}

// GetPost reads a row with a strongly consistent read.
func (s *Posts) GetPost(ctx context.Context, id string) (channel.Row, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: deliveryKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return channel.Row{}, fmt.Errorf("get post %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return channel.Row{}, fmt.Errorf("post %s: %w", id, store.ErrNotFound)
	}
	return postRowOf(out.Item)
}

// update runs one conditional update of row id; a failed condition is
// store.ErrConflict, read back: when the row as it is shows the write applied
// (the SDK retried a write whose answer was lost), it is the result.
func (s *Posts) update(ctx context.Context, id string, upd expression.UpdateBuilder, cond expression.ConditionBuilder,
	applied func(channel.Row) bool) (channel.Row, error) {
	attrs, err := conditionalUpdate(ctx, s.db, s.table, deliveryKey(id), upd, cond, types.ReturnValueAllNew)
	if err == nil {
		return postRowOf(attrs)
	}
	if !errors.Is(err, store.ErrConflict) {
		return channel.Row{}, fmt.Errorf("update post %s: %w", id, err)
	}
	cur, gerr := s.GetPost(ctx, id)
	if gerr != nil {
		if errors.Is(gerr, store.ErrNotFound) {
			return channel.Row{}, fmt.Errorf("post %s: %w", id, store.ErrConflict)
		}
		return channel.Row{}, errors.Join(err, gerr)
	}
	if applied != nil && applied(cur) {
		return cur, nil
	}
	return cur, fmt.Errorf("post %s is %s: %w", id, cur.Status, store.ErrConflict)
}

func postStatus(s string) expression.UpdateBuilder {
	return expression.Set(expression.Name(attrStatus), expression.Value(s))
}

func postIs(s string) expression.ConditionBuilder {
	return expression.Name(attrStatus).Equal(expression.Value(s))
}

func postClaimHeld(token string) expression.ConditionBuilder {
	return postIs(postStatusSend).And(expression.Name(attrClaimToken).Equal(expression.Value(token)))
}

// ClaimPost: pending, or sending under a lapsed lease → sending.
func (s *Posts) ClaimPost(ctx context.Context, id, token string, lease time.Duration) (channel.Row, error) {
	now := s.now().UTC()
	upd := postStatus(postStatusSend).
		Add(expression.Name(attrAttempts), expression.Value(1)).
		Set(expression.Name(attrLeaseUntil), expression.Value(ts(now.Add(lease)))).
		Set(expression.Name(attrClaimToken), expression.Value(token)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(now)))
	cond := rowExists().And(expression.Or(postIs(postStatusWait),
		postIs(postStatusSend).And(expression.Name(attrLeaseUntil).LessThanEqual(expression.Value(ts(now))))))
	return s.update(ctx, id, upd, cond, func(r channel.Row) bool {
		return r.Status == channel.StatusSending && r.ClaimToken == token
	})
}

// MarkPostSent: the channel took the post; one write under the claim.
func (s *Posts) MarkPostSent(ctx context.Context, id, token string, receipt channel.Receipt) (channel.Row, error) {
	now := ts(s.now())
	upd := postStatus(postStatusSent).
		Set(expression.Name(attrPostReceipt), expression.Value(receipt.Ref)).
		Set(expression.Name(attrPostSentAt), expression.Value(now)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Remove(expression.Name(attrLeaseUntil)).Remove(expression.Name(attrClaimToken)).
		Remove(expression.Name(attrLastErrorClass)).Remove(expression.Name(schema.Sweep))
	return s.update(ctx, id, upd, postClaimHeld(token), func(r channel.Row) bool {
		return r.Status == channel.StatusSent && r.Receipt == receipt
	})
}

// ReleasePost: the try failed; back to pending for another claim.
func (s *Posts) ReleasePost(ctx context.Context, id, token, errorClass string) (channel.Row, error) {
	upd := postStatus(postStatusWait).
		Set(expression.Name(attrLastErrorClass), expression.Value(errorClass)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now()))).
		Remove(expression.Name(attrLeaseUntil)).Remove(expression.Name(attrClaimToken))
	return s.update(ctx, id, upd, postClaimHeld(token), func(r channel.Row) bool {
		return r.Status == channel.StatusPending && r.ClaimToken == "" && r.LastErrorClass == errorClass
	})
}

// SettlePost settles r's row without a send, creating it settled if it
// does not exist.
func (s *Posts) SettlePost(ctx context.Context, r channel.Row, token, reason string) (channel.Row, error) {
	now := ts(s.now())
	upd := postStatus(postStatusSettle).
		Set(expression.Name(attrPostSettled), expression.Value(reason)).
		Set(expression.Name(attrPostKind), expression.Value(postKind)).
		Set(expression.Name(attrPostJob), expression.Value(string(r.JobID))).
		Set(expression.Name(attrPostChannel), expression.Value(r.Channel)).
		Set(expression.Name(attrPostPhase), expression.Value(string(r.Phase))).
		Set(expression.Name(attrPostCreated), expression.IfNotExists(expression.Name(attrPostCreated), expression.Value(now))).
		Set(expression.Name(attrAttempts), expression.IfNotExists(expression.Name(attrAttempts), expression.Value(0))).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Remove(expression.Name(attrLeaseUntil)).Remove(expression.Name(attrClaimToken)).Remove(expression.Name(schema.Sweep))
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		upd = upd.Set(expression.Name(attrExpiresAt), expression.IfNotExists(expression.Name(attrExpiresAt), expression.Value(exp)))
	}
	cond := expression.Or(expression.AttributeNotExists(expression.Name(attrDeliveryID)), postIs(postStatusWait))
	if token != "" {
		cond = expression.Or(cond, postClaimHeld(token))
	}
	return s.update(ctx, r.ID, upd, cond, func(c channel.Row) bool {
		return c.Status == channel.StatusSettled && c.SettleReason == reason
	})
}

// UnsettledPosts reads the live index's post partition, then the rows
// whole (strongly consistent), and calls fn for each claimable one.
func (s *Posts) UnsettledPosts(ctx context.Context, fn func(channel.Row) error) error {
	now := s.now()
	return eachLive(ctx, s.db, s.table, sweepPost, "unsettled posts", func(item map[string]types.AttributeValue) (channel.Row, bool, error) {
		r, err := postRowOf(item)
		if err != nil {
			return r, false, err
		}
		return r, r.Claimable(now), nil
	}, fn)
}
