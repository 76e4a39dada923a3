package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Preferences keeps what Criticizer knows about an address across jobs, in the
// jobs table under the recipient's opaque id (unsubscribe.RecipientID; never
// the address):
//
//	PREF#<id>  kind "preference": the preference record (preferences.go):
//	           unsubscribed_all, repositories (the muted set), mode,
//	           digest_hour, time_zone, min_severity, rev, updated_at
//	SUPP#<id>  kind "suppression": reason, first_at, last_at, events
//
// A one-click unsubscribe and a suppression are written with UpdateItem
// expressions that are idempotent (SET to true, ADD to a set), so a
// repeated one-click POST or a redelivered SES event changes nothing; the
// preference page saves the record whole, on the revision it read.
type Preferences struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

// NewPreferences returns the preference records (store.Preferences) on the
// jobs table.
func NewPreferences(db *dynamodb.Client, jobsTable string, now store.Clock) *Preferences {
	if now == nil {
		now = time.Now
	}
	return &Preferences{db: db, table: jobsTable, now: now}
}

func prefKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixPreference + id)}
}

func suppKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixSuppression + id)}
}

// Suppress records a permanent bounce or a complaint for the recipient. The
// first reason and time are kept; later events only count.
func (r *Preferences) Suppress(ctx context.Context, recipientID, reason string, at time.Time) error {
	upd := expression.Set(expression.Name("kind"), expression.Value("suppression")).
		Set(expression.Name("reason"), expression.IfNotExists(expression.Name("reason"), expression.Value(reason))).
		Set(expression.Name("first_at"), expression.IfNotExists(expression.Name("first_at"), expression.Value(ts(at)))).
		Set(expression.Name("last_at"), expression.Value(ts(at))).
		Add(expression.Name("events"), expression.Value(1))
	return r.update(ctx, suppKey(recipientID), upd)
}

func (r *Preferences) update(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder) error {
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

// Standings implements Preferences.Standings: the standing of every
// recipient id, with one BatchGetItem per 50 recipients (one call for any
// realistic reviewer list) reading both items of each. Recipients with no
// items have no suppression and the default preferences: send.
func (r *Preferences) Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error) {
	out := make(map[string]delivery.Standing, len(ids))
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		if _, dup := out[id]; dup {
			continue
		}
		out[id] = delivery.Standing{Preferences: prefs.Default().Normalized()}
		keys = append(keys, prefKey(id), suppKey(id))
	}
	if err := batchGet(ctx, r.db, r.table, keys, func(item map[string]types.AttributeValue) error {
		return mergeStanding(out, item)
	}); err != nil {
		return nil, err
	}
	return out, nil
}
