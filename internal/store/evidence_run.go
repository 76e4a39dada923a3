package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The run of clear readings of the feedback queue (internal/drain): when
// the current run began, and when the last reading was recorded.
const (
	attrClearSince = "clear_since"
	attrReadAt     = "read_at"
)

// observeTries bounds the optimistic retries of one reading; past them the
// reading is not recorded and reports no run, which only delays a drain.
const observeTries = 5

// Observe records one reading of the feedback queue made at at (R-EVIDENCE-2)
// and returns when the current run of clear readings began (zero: no
// run). A clear reading (no visible or delayed message in the queue,
// nothing in its DLQ) continues the run if the last reading was at most
// gap before it, else starts one at at; one that is not clear ends the
// run, always — concurrent sweepers cannot lose it. A clear reading older
// than the last one recorded adds nothing.
func (e *Evidence) Observe(ctx context.Context, set string, at time.Time, clear bool, gap time.Duration) (time.Time, error) {
	if !clear {
		upd := expression.Remove(expression.Name(attrClearSince)).Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
		if err := e.update(ctx, set, upd); err != nil {
			return time.Time{}, fmt.Errorf("end the run of clear readings: %w", err)
		}
		return time.Time{}, e.forward(ctx, set, attrReadAt, at, "record the reading")
	}
	for range observeTries {
		out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table, Key: evidenceKey(set), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return time.Time{}, fmt.Errorf("read the run of clear readings: %w", err)
		}
		rawSince, since := timeAttr(out.Item, attrClearSince)
		rawRead, readAt := timeAttr(out.Item, attrReadAt)
		if !at.After(readAt) {
			return since, nil
		}
		next := since
		if since.IsZero() || readAt.IsZero() || at.Sub(readAt) > gap {
			next = at
		}
		upd := expression.Set(expression.Name(attrClearSince), expression.Value(ts(next))).
			Set(expression.Name(attrReadAt), expression.Value(ts(at))).
			Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
		_, err = conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd,
			unchanged(attrClearSince, rawSince).And(unchanged(attrReadAt, rawRead)), types.ReturnValueNone)
		if errors.Is(err, ErrConflict) {
			continue // another reading was recorded meanwhile
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("record the run of clear readings: %w", err)
		}
		return next, nil
	}
	return time.Time{}, nil
}

// unchanged is the condition that attr still holds raw ("" : absent).
func unchanged(attr, raw string) expression.ConditionBuilder {
	if raw == "" {
		return expression.AttributeNotExists(expression.Name(attr))
	}
	return expression.Name(attr).Equal(expression.Value(raw))
}

// timeAttr reads a time attribute, as stored and parsed.
func timeAttr(item map[string]types.AttributeValue, attr string) (string, time.Time) {
	sv, ok := item[attr].(*types.AttributeValueMemberS)
	if !ok {
		return "", time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, sv.Value)
	if err != nil {
		return sv.Value, time.Time{}
	}
	return sv.Value, t
}
