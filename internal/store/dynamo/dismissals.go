package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/vote"
)

// Dismissals implements Dismissals on the jobs table, one item per
// changelist and reader:
//
//	DISMISS#<changelist key>#<recipient id>   marks (key → choice, time), rev
//
// so notify reads every recipient's marks for a version in one
// BatchGetItem before it renders. A vote reads the item, applies the
// choice and writes it back on condition that nobody wrote it since (its
// rev), as Rosters does; the item holds at most vote.MaxMarks marks (about
// 16 KB). Like a vote it is history: it expires Retention after its last
// write (R-COST-2).
type Dismissals struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is the TTL of an item from its last write; zero: kept.
	Retention time.Duration
}

var _ store.Dismissals = (*Dismissals)(nil)

// NewDismissals returns the dismissals repository on the jobs table.
func NewDismissals(db *dynamodb.Client, jobsTable string, now store.Clock) *Dismissals {
	if now == nil {
		now = time.Now
	}
	return &Dismissals{db: db, table: jobsTable, now: now}
}

type dismissalItem struct {
	PK          string                    `dynamodbav:"pk"`
	Kind        string                    `dynamodbav:"kind"`
	RecipientID string                    `dynamodbav:"recipient_id"`
	Marks       map[string]voteMarkRecord `dynamodbav:"marks"`
	Rev         int                       `dynamodbav:"rev"`
	UpdatedAt   time.Time                 `dynamodbav:"updated_at"`
	ExpiresAt   int64                     `dynamodbav:"expires_at,omitempty"`
}

func dismissalPK(changelistKey, recipientID string) string {
	return schema.PrefixDismissal + changelistKey + "#" + recipientID
}

func (s *Dismissals) get(ctx context.Context, pk string) (dismissalItem, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(pk)}})
	if err != nil {
		return dismissalItem{}, fmt.Errorf("get dismissals: %w", err)
	}
	var it dismissalItem
	if len(out.Item) != 0 {
		if err := unmarshal(out.Item, &it); err != nil {
			return dismissalItem{}, err
		}
	}
	return it, nil
}

// Mark implements Dismissals.Mark: read, apply, write on the rev read.
// A writer that lost re-reads and applies again; since the latest choice
// wins by when it was made, the result is the same whichever writer
// wins. A write the SDK repeated after a lost answer fails its condition,
// and the choice applied again to the item it wrote changes nothing.
func (s *Dismissals) Mark(ctx context.Context, changelistKey, recipientID, key string, c vote.Choice, at time.Time) (vote.MarkOutcome, error) {
	pk := dismissalPK(changelistKey, recipientID)
	for range 10 {
		it, err := s.get(ctx, pk)
		if err != nil {
			return "", err
		}
		marks, outcome := stored[vote.Marks](it.Marks).Apply(key, c, at)
		if !outcome.Changed() {
			return outcome, nil
		}
		prev := it.Rev
		now := s.now().UTC()
		it = dismissalItem{PK: pk, Kind: "dismissals", RecipientID: recipientID, Marks: stored[map[string]voteMarkRecord](marks), Rev: prev + 1,
			UpdatedAt: now, ExpiresAt: expiresAt(now, s.Retention)}
		item, err := marshal(it)
		if err != nil {
			return "", err
		}
		cond := aws.String("attribute_not_exists(pk)")
		var values map[string]types.AttributeValue
		if prev > 0 {
			cond = aws.String("rev = :prev")
			values = map[string]types.AttributeValue{":prev": &types.AttributeValueMemberN{Value: fmt.Sprint(prev)}}
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item, ConditionExpression: cond,
			ExpressionAttributeValues: values})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue // another vote wrote first: apply to theirs
		}
		if err != nil {
			return "", fmt.Errorf("write dismissals: %w", err)
		}
		return outcome, nil
	}
	return "", fmt.Errorf("write dismissals: %w: too many concurrent writers", store.ErrConflict)
}

// Marks implements Dismissals.Marks: one BatchGetItem (per 100
// recipients), strongly consistent.
func (s *Dismissals) Marks(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]vote.Marks, error) {
	out := map[string]vote.Marks{}
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, id := range recipientIDs {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, map[string]types.AttributeValue{"pk": str(dismissalPK(changelistKey, id))})
		}
	}
	err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		var it dismissalItem
		if err := unmarshal(item, &it); err != nil {
			return err
		}
		if len(it.Marks) > 0 {
			out[it.RecipientID] = stored[vote.Marks](it.Marks)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read dismissals: %w", err)
	}
	return out, nil
}
