package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Rosters keeps each changelist's reviewer roster (reviewers.Roster) in the
// jobs table, one item per changelist:
//
//	ROSTER#<source>:<changelist>   entries (username → mark), rev
//
// Intake applies what reviewer webhooks say; the fetch stage reads it when
// it decides who reviews a version. A roster expires after Retention
// without a change (R-COST-2): it matters while the changelist is being
// reviewed.
type Rosters struct {
	db        *dynamodb.Client
	table     string
	now       store.Clock
	Retention time.Duration
}

// NewRosters returns the roster repository on the jobs table.
func NewRosters(db *dynamodb.Client, table string, now store.Clock) *Rosters {
	if now == nil {
		now = time.Now
	}
	return &Rosters{db: db, table: table, now: now}
}

type rosterItem struct {
	PK           string                      `dynamodbav:"pk"`
	Kind         string                      `dynamodbav:"kind"`
	Source       string                      `dynamodbav:"source"`
	ChangelistID string                      `dynamodbav:"changelist_id"`
	Entries      map[string]rosterMarkRecord `dynamodbav:"entries"`
	Rev          int                         `dynamodbav:"rev"`
	UpdatedAt    time.Time                   `dynamodbav:"updated_at"`
	ExpiresAt    int64                       `dynamodbav:"expires_at,omitempty"`
}

func rosterKey(source, changelistID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixRoster + job.ChangelistKey(source, changelistID))}
}

// Get reads a changelist's roster; an empty one when it has none.
func (s *Rosters) Get(ctx context.Context, source, changelistID string) (reviewers.Roster, error) {
	_, r, err := s.get(ctx, source, changelistID)
	return r, err
}

// get reads a changelist's roster item and the roster it stores (empty,
// not nil, when there is none).
func (s *Rosters) get(ctx context.Context, source, changelistID string) (rosterItem, reviewers.Roster, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: rosterKey(source, changelistID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return rosterItem{}, nil, fmt.Errorf("get roster: %w", err)
	}
	var it rosterItem
	if len(out.Item) == 0 {
		return it, reviewers.Roster{}, nil
	}
	if err := unmarshal(out.Item, &it); err != nil {
		return rosterItem{}, nil, err
	}
	r := stored[reviewers.Roster](it.Entries)
	if r == nil {
		r = reviewers.Roster{}
	}
	return it, r, nil
}

// Apply merges events into a changelist's roster and returns it. It reads
// the roster, merges, and writes it back on condition that nobody wrote
// it since (its rev); a writer that lost re-reads and merges again, and
// since merging is order-free (reviewers.Roster) the result is the same
// whichever writer wins. Events that change nothing write nothing.
func (s *Rosters) Apply(ctx context.Context, source, changelistID string, events []reviewers.Event) (reviewers.Roster, error) {
	for attempt := 0; attempt < 10; attempt++ {
		it, roster, err := s.get(ctx, source, changelistID)
		if err != nil {
			return nil, err
		}
		changed := false
		for _, ev := range events {
			changed = roster.Apply(ev) || changed
		}
		if !changed {
			return roster, nil
		}
		it.Entries = stored[map[string]rosterMarkRecord](roster)
		prev := it.Rev
		now := s.now().UTC()
		it.PK, it.Kind, it.Source, it.ChangelistID = schema.PrefixRoster+job.ChangelistKey(source, changelistID), "roster", source, changelistID
		it.Rev, it.UpdatedAt, it.ExpiresAt = prev+1, now, expiresAt(now, s.Retention)
		item, err := marshal(it)
		if err != nil {
			return nil, err
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
			continue // another writer merged first: merge into theirs
		}
		if err != nil {
			return nil, fmt.Errorf("write roster: %w", err)
		}
		return roster, nil
	}
	return nil, fmt.Errorf("write roster: %w: too many concurrent writers", store.ErrConflict)
}

var _ store.Rosters = (*Rosters)(nil)
