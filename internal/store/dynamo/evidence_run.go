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
	"github.com/criticizer/criticizer/internal/store"
)

// The run of clear readings of the feedback queue (internal/drain): when
// the current run began, when the current streak of readings that were not
// clear began, and when the last reading was recorded.
const (
	attrClearSince = "clear_since"
	attrDirtySince = "dirty_since"
	attrReadAt     = "read_at"
)

// observeTries bounds the optimistic retries of one reading; past them a
// clear reading is not recorded and reports no run (which only delays a
// drain), and one that was not clear ends the run.
const observeTries = 5

// Observe records one reading of the feedback queue made at at, the
// sweeper's schedule being every (R-EVIDENCE-2), and returns when the
// current run of clear readings began (zero: no run). A clear reading (no
// visible or delayed message in the queue, nothing in its DLQ) continues
// the run if the last reading was at most 2·every before it, else starts
// one at at. One that is not clear is tolerated alone — a message seen
// visible at one instant may be seconds old — but ends the run once such
// readings have lasted every or more, or follow a gap. A clear reading
// older than the last one recorded adds nothing; concurrent sweepers
// cannot lose a reading that ends the run.
func (e *Evidence) Observe(ctx context.Context, set string, at time.Time, r store.Reading, every time.Duration) (time.Time, error) {
	for range observeTries {
		out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table, Key: evidenceKey(set), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return time.Time{}, fmt.Errorf("read the run of clear readings: %w", err)
		}
		rawSince, since := timeAttr(out.Item, attrClearSince)
		rawDirty, dirty := timeAttr(out.Item, attrDirtySince)
		rawRead, readAt := timeAttr(out.Item, attrReadAt)
		next := store.NextRun(store.RunState{ClearSince: since, DirtySince: dirty, ReadAt: readAt}, at, r, every)
		upd := expression.Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
		for attr, v := range map[string]time.Time{attrClearSince: next.ClearSince, attrDirtySince: next.DirtySince, attrReadAt: next.ReadAt} {
			if v.IsZero() {
				upd = upd.Remove(expression.Name(attr))
			} else {
				upd = upd.Set(expression.Name(attr), expression.Value(ts(v)))
			}
		}
		_, err = conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd,
			unchanged(attrClearSince, rawSince).And(unchanged(attrDirtySince, rawDirty), unchanged(attrReadAt, rawRead)), types.ReturnValueNone)
		if errors.Is(err, store.ErrConflict) {
			continue // another reading was recorded meanwhile
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("record the run of clear readings: %w", err)
		}
		return next.ClearSince, nil
	}
	if r != store.ReadingClear {
		upd := expression.Remove(expression.Name(attrClearSince)).Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
		if err := e.update(ctx, set, upd); err != nil {
			return time.Time{}, fmt.Errorf("end the run of clear readings: %w", err)
		}
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
