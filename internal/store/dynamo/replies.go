package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Replies implements Mutes, ReplyWindows and ReplyClaims on the
// jobs table:
//
//	MUTE#<changelist key>#<recipient id>        kind "mute", recipient_id, muted_at
//	REPLYWIN#<delivery id>#<window start>       kind "reply_window", ids (string set)
//	REPLYACT#<confirmation's delivery id>       kind "reply_claim", ses_message_id
//
// A mute is history like a dismissal: it expires Retention after it was
// written (R-COST-2), and so does a claim, with the confirmation row it
// fences. A window expires a day after it ends.
type Replies struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is the TTL of a mute from its write; zero: kept.
	Retention time.Duration
}

var (
	_ store.Mutes        = (*Replies)(nil)
	_ store.ReplyWindows = (*Replies)(nil)
	_ store.ReplyClaims  = (*Replies)(nil)
)

// NewReplies returns the replies repository on the jobs table.
func NewReplies(db *dynamodb.Client, jobsTable string, now store.Clock) *Replies {
	if now == nil {
		now = time.Now
	}
	return &Replies{db: db, table: jobsTable, now: now}
}

func mutePK(changelistKey, recipientID string) string {
	return schema.PrefixMute + changelistKey + "#" + recipientID
}

// Mute implements Mutes.Mute: one UpdateItem, idempotent (the first
// time is kept).
func (s *Replies) Mute(ctx context.Context, changelistKey, recipientID string, at time.Time) error {
	upd := expression.Set(expression.Name("kind"), expression.Value("mute")).
		Set(expression.Name("recipient_id"), expression.Value(recipientID)).
		Set(expression.Name("muted_at"), expression.IfNotExists(expression.Name("muted_at"), expression.Value(ts(at))))
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		upd = upd.Set(expression.Name(schema.ExpiresAt), expression.Value(exp))
	}
	e, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("build update: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(mutePK(changelistKey, recipientID))},
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	if err != nil {
		return fmt.Errorf("record mute: %w", err)
	}
	return nil
}

// Muted implements Mutes.Muted: one BatchGetItem per 100 recipients,
// strongly consistent.
func (s *Replies) Muted(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, id := range recipientIDs {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, map[string]types.AttributeValue{"pk": str(mutePK(changelistKey, id))})
		}
	}
	err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		var it struct {
			RecipientID string `dynamodbav:"recipient_id"`
		}
		if err := unmarshal(item, &it); err != nil {
			return err
		}
		out[it.RecipientID] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read mutes: %w", err)
	}
	return out, nil
}

// Admit implements ReplyWindows.Admit with one conditional UpdateItem
// that adds the message id to the window's set: on condition that the
// window is new, already holds the id, or holds fewer than max. A repeat
// (the SDK's retry after a lost answer, a redelivered reply) finds its id
// in the set and adds nothing, so it is safe to retry.
func (s *Replies) Admit(ctx context.Context, deliveryID, messageID string, start time.Time, window time.Duration, max int) (bool, error) {
	pk := schema.PrefixReplyWindow + deliveryID + "#" + strconv.FormatInt(start.Unix(), 10)
	ids := expression.Name("ids")
	upd := expression.Set(expression.Name("kind"), expression.Value("reply_window")).
		Set(expression.Name(schema.ExpiresAt), expression.Value(start.Add(window+24*time.Hour).Unix())).
		Add(ids, expression.Value(&types.AttributeValueMemberSS{Value: []string{messageID}}))
	cond := expression.AttributeNotExists(ids).
		Or(expression.Contains(ids, messageID)).
		Or(expression.Size(ids).LessThan(expression.Value(max)))
	_, err := conditionalUpdate(ctx, s.db, s.table, map[string]types.AttributeValue{"pk": str(pk)}, upd, cond, types.ReturnValueNone)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("count reply: %w", err)
	}
	return true, nil
}

// Claim implements ReplyClaims.Claim with one conditional UpdateItem: the
// claim's SES message id is set on condition that none is, or that it is
// this one. A repeat (the SDK's retry after a lost answer, the same
// receipt redelivered) meets its own id and passes, so it is safe to
// retry; another receipt's fails the condition.
func (s *Replies) Claim(ctx context.Context, confirmationID, sesMessageID string) (bool, error) {
	owner := expression.Name("ses_message_id")
	upd := expression.Set(expression.Name("kind"), expression.Value("reply_claim")).
		Set(owner, expression.Value(sesMessageID))
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		upd = upd.Set(expression.Name(schema.ExpiresAt), expression.Value(exp))
	}
	cond := expression.AttributeNotExists(owner).Or(owner.Equal(expression.Value(sesMessageID)))
	_, err := conditionalUpdate(ctx, s.db, s.table, map[string]types.AttributeValue{"pk": str(schema.PrefixReplyClaim + confirmationID)},
		upd, cond, types.ReturnValueNone)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim reply: %w", err)
	}
	return true, nil
}
