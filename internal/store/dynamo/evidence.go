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
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Evidence keeps, per SES configuration set, how far the feedback
// function has processed provider events (R-EVIDENCE-2):
//
//   - the newest SES event time (mail.timestamp) it has recorded: proof
//     that SES published, and the path delivered, events of mail
//     accepted up to then (stored as "watermark");
//   - the drain time: every message that reached the feedback queue
//     before it has been processed, as shown by the queue and its DLQ
//     found empty (internal/drain) (stored as "drained_at").
//
// The notifier resends a send whose answer was lost only when both are
// past it (delivery.Evidence.CaughtUp); before that, a missing event
// proves nothing. One item per configuration set in the jobs table (pk
// EVIDENCE#<set>).
//
// The item also records when the notifier last sent an evidence probe (a
// message to the SES mailbox simulator through the same configuration
// set), so that a held row with no other mail flowing still sees the
// newest event time move, and so probes stay rare.
type Evidence struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

// NewEvidence returns the evidence path's store on the jobs table.
func NewEvidence(db *dynamodb.Client, jobsTable string, now store.Clock) *Evidence {
	if now == nil {
		now = time.Now
	}
	return &Evidence{db: db, table: jobsTable, now: now}
}

func evidenceKey(set string) map[string]types.AttributeValue {
	if set == "" {
		set = "-"
	}
	return map[string]types.AttributeValue{"pk": str(schema.PrefixEvidence + set)}
}

// Evidence item attributes. "watermark" keeps its name from the design
// it replaced: it still means the newest event time recorded.
const (
	attrNewest      = "watermark"
	attrDrained     = "drained_at"
	attrProbeSentAt = "probe_sent_at"
)

// Advance moves the newest event time of set forward to at; a time already
// at or past at is left as it is (events arrive out of order).
func (e *Evidence) Advance(ctx context.Context, set string, at time.Time) error {
	return e.forward(ctx, set, attrNewest, at, "advance the newest evidence")
}

// Drain moves the drain time of set forward to at: every message that
// reached the feedback queue before at has been processed.
func (e *Evidence) Drain(ctx context.Context, set string, at time.Time) error {
	return e.forward(ctx, set, attrDrained, at, "advance the evidence drain time")
}

// forward sets attr to at unless it is already at or past it: one
// conditional write, so concurrent writers only ever move it forward.
func (e *Evidence) forward(ctx context.Context, set, attr string, at time.Time, what string) error {
	upd := expression.Set(expression.Name(attr), expression.Value(ts(at))).
		Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
	cond := expression.AttributeNotExists(expression.Name(attr)).
		Or(expression.Name(attr).LessThan(expression.Value(ts(at))))
	_, err := conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd, cond, types.ReturnValueNone)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// State reads the evidence state of set, strongly consistent.
func (e *Evidence) State(ctx context.Context, set string) (store.EvidenceState, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table, Key: evidenceKey(set), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.EvidenceState{}, fmt.Errorf("get evidence state: %w", err)
	}
	var st store.EvidenceState
	for k, dst := range map[string]*time.Time{attrNewest: &st.Newest, attrDrained: &st.Drained, attrProbeSentAt: &st.ProbeSentAt,
		attrClearSince: &st.ClearSince, attrDirtySince: &st.DirtySince, attrReadAt: &st.ReadAt} {
		if sv, ok := out.Item[k].(*types.AttributeValueMemberS); ok {
			if t, perr := time.Parse(time.RFC3339Nano, sv.Value); perr == nil {
				*dst = t
			}
		}
	}
	return st, nil
}

func (e *Evidence) update(ctx context.Context, set string, upd expression.UpdateBuilder) error {
	x, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return err
	}
	_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &e.table, Key: evidenceKey(set),
		UpdateExpression: x.Update(), ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values()})
	return err
}

// ClaimProbe reserves the sending of one evidence probe for set, needed to
// move the newest event time past need: it succeeds (true) only while the
// newest event time is still before need and no probe was sent since need — or
// the last one is older than every (its events were lost; try again). A
// false answer means a probe that serves is already on its way.
func (e *Evidence) ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error) {
	now := e.now().UTC()
	upd := expression.Set(expression.Name(attrProbeSentAt), expression.Value(ts(now)))
	cond := expression.Or(expression.AttributeNotExists(expression.Name(attrNewest)),
		expression.Name(attrNewest).LessThan(expression.Value(ts(need)))).
		And(expression.Or(expression.AttributeNotExists(expression.Name(attrProbeSentAt)),
			expression.Name(attrProbeSentAt).LessThan(expression.Value(ts(need))),
			expression.Name(attrProbeSentAt).LessThan(expression.Value(ts(now.Add(-every))))))
	_, err := conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd, cond, types.ReturnValueNone)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim evidence probe: %w", err)
	}
	return true, nil
}

// ForgetProbe clears the record of the last probe (one that could not be
// sent), so the next notifier that needs one sends it.
func (e *Evidence) ForgetProbe(ctx context.Context, set string) error {
	if err := e.update(ctx, set, expression.Remove(expression.Name(attrProbeSentAt))); err != nil {
		return fmt.Errorf("forget evidence probe: %w", err)
	}
	return nil
}

var _ store.Evidence = (*Evidence)(nil)
