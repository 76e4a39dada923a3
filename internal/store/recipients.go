package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store/schema"
)

// Recipients keeps what Criticizer knows about an address across jobs, in the
// jobs table under the recipient's opaque id (unsubscribe.RecipientID; never
// the address):
//
//	PREF#<id>  kind "preference": unsubscribed_all, repositories (string set)
//	SUPP#<id>  kind "suppression": reason, first_at, last_at, events
//
// Both are written with UpdateItem expressions that are idempotent (SET to
// true, ADD to a set), so a repeated one-click POST or a redelivered SES
// event changes nothing.
type Recipients struct {
	db    *dynamodb.Client
	table string
	now   Clock
}

// NewRecipients returns the recipients repository on the jobs table.
func NewRecipients(db *dynamodb.Client, jobsTable string, now Clock) *Recipients {
	if now == nil {
		now = time.Now
	}
	return &Recipients{db: db, table: jobsTable, now: now}
}

func prefKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixPreference + id)}
}

func suppKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixSuppression + id)}
}

// Unsubscribe records that the recipient left scope: every email when all
// is true, else the one repository.
func (r *Recipients) Unsubscribe(ctx context.Context, recipientID, repository string, all bool) error {
	upd := expression.Set(expression.Name("kind"), expression.Value("preference")).
		Set(expression.Name("updated_at"), expression.Value(ts(r.now())))
	if all {
		upd = upd.Set(expression.Name("unsubscribed_all"), expression.Value(true))
	} else {
		upd = upd.Add(expression.Name("repositories"), expression.Value(&types.AttributeValueMemberSS{Value: []string{repository}}))
	}
	return r.update(ctx, prefKey(recipientID), upd)
}

// Suppress records a permanent bounce or a complaint for the recipient. The
// first reason and time are kept; later events only count.
func (r *Recipients) Suppress(ctx context.Context, recipientID, reason string, at time.Time) error {
	upd := expression.Set(expression.Name("kind"), expression.Value("suppression")).
		Set(expression.Name("reason"), expression.IfNotExists(expression.Name("reason"), expression.Value(reason))).
		Set(expression.Name("first_at"), expression.IfNotExists(expression.Name("first_at"), expression.Value(ts(at)))).
		Set(expression.Name("last_at"), expression.Value(ts(at))).
		Add(expression.Name("events"), expression.Value(1))
	return r.update(ctx, suppKey(recipientID), upd)
}

func (r *Recipients) update(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder) error {
	e, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("build update: %w", err)
	}
	_, err = r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &r.table, Key: key,
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	if err != nil {
		return fmt.Errorf("update %s: %w", r.table, err)
	}
	return nil
}

// Standings reads the standing of every recipient id, with one BatchGetItem
// per 50 recipients (one call for any realistic reviewer list). Recipients
// with no items have the zero Standing: send.
func (r *Recipients) Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error) {
	out := make(map[string]delivery.Standing, len(ids))
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		if _, dup := out[id]; dup {
			continue
		}
		out[id] = delivery.Standing{}
		keys = append(keys, prefKey(id), suppKey(id))
	}
	if err := batchGet(ctx, r.db, r.table, keys, func(item map[string]types.AttributeValue) error {
		return mergeStanding(out, item)
	}); err != nil {
		return nil, err
	}
	return out, nil
}

func mergeStanding(out map[string]delivery.Standing, item map[string]types.AttributeValue) error {
	var it struct {
		PK              string   `dynamodbav:"pk"`
		UnsubscribedAll bool     `dynamodbav:"unsubscribed_all"`
		Repositories    []string `dynamodbav:"repositories,stringset"`
		Reason          string   `dynamodbav:"reason"`
	}
	if err := unmarshal(item, &it); err != nil {
		return err
	}
	if id, ok := strings.CutPrefix(it.PK, schema.PrefixPreference); ok {
		s := out[id]
		s.UnsubscribedAll, s.Repositories = it.UnsubscribedAll, it.Repositories
		out[id] = s
	} else if id, ok := strings.CutPrefix(it.PK, schema.PrefixSuppression); ok {
		s := out[id]
		s.Suppressed, s.Reason = true, it.Reason
		out[id] = s
	}
	return nil
}
