package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/vote"
)

// Votes implements Votes on the jobs table, under
// VOTE#<delivery id>#<finding id>. A vote is history, not a promise: it
// expires Retention after its last write (R-COST-2).
type Votes struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is the TTL of a vote from its last write; zero: kept.
	Retention time.Duration
}

// NewVotes returns the votes repository on the jobs table.
func NewVotes(db *dynamodb.Client, jobsTable string, now store.Clock) *Votes {
	if now == nil {
		now = time.Now
	}
	return &Votes{db: db, table: jobsTable, now: now}
}

type voteItem struct {
	PK         string `dynamodbav:"pk"`
	DeliveryID string `dynamodbav:"delivery_id"`
	FindingID  string `dynamodbav:"finding_id"`
	Choice     string `dynamodbav:"choice"`
	Rule       string `dynamodbav:"rule"`
	VotedAt    string `dynamodbav:"voted_at"`
}

// Record is one UpdateItem that sets the choice and returns the one it
// replaced: clicks, however many and from wherever, leave one item.
func (s *Votes) Record(ctx context.Context, v vote.Vote) (vote.Outcome, error) {
	now := s.now()
	upd := expression.Set(expression.Name("kind"), expression.Value("vote")).
		Set(expression.Name("delivery_id"), expression.Value(v.DeliveryID)).
		Set(expression.Name("finding_id"), expression.Value(v.FindingID)).
		Set(expression.Name("choice"), expression.Value(string(v.Choice))).
		Set(expression.Name("rule"), expression.Value(v.Rule)).
		Set(expression.Name("voted_at"), expression.Value(ts(v.VotedAt))).
		Set(expression.Name("first_at"), expression.IfNotExists(expression.Name("first_at"), expression.Value(ts(v.VotedAt))))
	if exp := expiresAt(now, s.Retention); exp != 0 {
		upd = upd.Set(expression.Name("expires_at"), expression.Value(exp))
	}
	e, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return "", fmt.Errorf("build update: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(schema.PrefixVote + v.DeliveryID + "#" + v.FindingID)},
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: types.ReturnValueUpdatedOld})
	if err != nil {
		return "", fmt.Errorf("record vote: %w", err)
	}
	return outcome(out.Attributes, v.Choice), nil
}

func outcome(old map[string]types.AttributeValue, c vote.Choice) vote.Outcome {
	prev, ok := old["choice"].(*types.AttributeValueMemberS)
	switch {
	case !ok:
		return vote.Recorded
	case vote.Choice(prev.Value) == c:
		return vote.Repeat
	default:
		return vote.Changed
	}
}

// List reads every vote with a Scan of the jobs table filtered to VOTE#
// items. It reads (and bills) the whole table: it is make eval's, run by
// an operator now and then, never on a request's path.
func (s *Votes) List(ctx context.Context) ([]vote.Vote, error) {
	e, err := expression.NewBuilder().WithFilter(expression.Name("pk").BeginsWith(schema.PrefixVote)).Build()
	if err != nil {
		return nil, fmt.Errorf("build filter: %w", err)
	}
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: aws.String(s.table), FilterExpression: e.Filter(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ConsistentRead: aws.Bool(true)})
	var out []vote.Vote
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan votes: %w", err)
		}
		for _, item := range page.Items {
			var it voteItem
			if err := unmarshal(item, &it); err != nil {
				return nil, err
			}
			at, _ := time.Parse(timeLayout, it.VotedAt)
			out = append(out, vote.Vote{DeliveryID: it.DeliveryID, FindingID: it.FindingID, Choice: vote.Choice(it.Choice), Rule: it.Rule, VotedAt: at})
		}
	}
	return out, nil
}
