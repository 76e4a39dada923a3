package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Evidence keeps, per SES configuration set, how far the feedback function
// has processed provider events: the watermark, the newest SES event time
// (mail.timestamp) it has recorded. The notifier resends a send whose
// answer was lost only once the watermark is past that send plus a margin
// (delivery.Settle); before that, a missing event proves nothing. One item
// per configuration set in the jobs table (pk EVIDENCE#<set>).
//
// The item also records when the notifier last sent an evidence probe (a
// message to the SES mailbox simulator through the same configuration
// set), so that a held row with no other mail flowing still sees the
// watermark move, and so probes stay rare.
type Evidence struct {
	db    *dynamodb.Client
	table string
	now   Clock
}

// NewEvidence returns the watermark store on the jobs table.
func NewEvidence(db *dynamodb.Client, jobsTable string, now Clock) *Evidence {
	if now == nil {
		now = time.Now
	}
	return &Evidence{db: db, table: jobsTable, now: now}
}

func evidenceKey(set string) map[string]types.AttributeValue {
	if set == "" {
		set = "-"
	}
	return map[string]types.AttributeValue{"pk": str(PrefixEvidence + set)}
}

// Advance moves the watermark of set forward to at; a watermark already at
// or past at is left as it is (events arrive out of order).
func (e *Evidence) Advance(ctx context.Context, set string, at time.Time) error {
	upd := expression.Set(expression.Name("watermark"), expression.Value(ts(at))).
		Set(expression.Name("updated_at"), expression.Value(ts(e.now())))
	cond := expression.AttributeNotExists(expression.Name("watermark")).
		Or(expression.Name("watermark").LessThan(expression.Value(ts(at))))
	_, err := conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd, cond, types.ReturnValueNone)
	if errors.Is(err, ErrConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("advance evidence watermark: %w", err)
	}
	return nil
}

// Watermark returns the watermark of set as the notifier must use it:
// the newest event time recorded, but never past an event the feedback
// function failed to record (it is still being retried, or went to the
// feedback DLQ) — that event may be the evidence of a send. Zero when no
// event was ever recorded.
func (e *Evidence) Watermark(ctx context.Context, set string) (time.Time, error) {
	st, err := e.State(ctx, set)
	if err != nil {
		return time.Time{}, err
	}
	return st.Effective(), nil
}

// EvidenceState is the stored state of a configuration set's evidence
// path.
type EvidenceState struct {
	// Watermark is the newest SES event time recorded.
	Watermark time.Time
	// Pending maps the SQS message id of each event the feedback function
	// has received but not yet recorded to the event's time.
	Pending map[string]time.Time
	// ProbeSentAt is when the last evidence probe was sent.
	ProbeSentAt time.Time
}

// Effective is the watermark held back before the oldest pending event.
func (s EvidenceState) Effective() time.Time {
	wm := s.Watermark
	for _, t := range s.Pending {
		if b := t.Add(-time.Nanosecond); b.Before(wm) {
			wm = b
		}
	}
	return wm
}

// pendingPrefix prefixes the attribute of each pending event: one
// top-level attribute per event, so registering and releasing a batch is
// one write each.
const pendingPrefix = "pending_"

// State reads the evidence state of set.
func (e *Evidence) State(ctx context.Context, set string) (EvidenceState, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table, Key: evidenceKey(set), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return EvidenceState{}, fmt.Errorf("get evidence watermark: %w", err)
	}
	st := EvidenceState{Pending: map[string]time.Time{}}
	for k, v := range out.Item {
		sv, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		t, perr := time.Parse(time.RFC3339Nano, sv.Value)
		switch {
		case perr != nil:
		case k == "watermark":
			st.Watermark = t
		case k == "probe_sent_at":
			st.ProbeSentAt = t
		case strings.HasPrefix(k, pendingPrefix):
			st.Pending[strings.TrimPrefix(k, pendingPrefix)] = t
		}
	}
	return st, nil
}

// HoldBack registers events the feedback function has received but not
// yet recorded (SQS message id → event time): until each is released, the
// watermark the notifier sees stays before it.
func (e *Evidence) HoldBack(ctx context.Context, set string, pending map[string]time.Time) error {
	if len(pending) == 0 {
		return nil
	}
	var upd expression.UpdateBuilder
	for id, t := range pending {
		upd = upd.Set(expression.Name(pendingPrefix+id), expression.Value(ts(t)))
	}
	if _, err := e.update(ctx, set, upd); err != nil {
		return fmt.Errorf("hold back evidence watermark: %w", err)
	}
	return nil
}

// Release forgets pending events that are now recorded.
func (e *Evidence) Release(ctx context.Context, set string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var upd expression.UpdateBuilder
	for _, id := range ids {
		upd = upd.Remove(expression.Name(pendingPrefix + id))
	}
	if _, err := e.update(ctx, set, upd); err != nil {
		return fmt.Errorf("release evidence watermark: %w", err)
	}
	return nil
}

func (e *Evidence) update(ctx context.Context, set string, upd expression.UpdateBuilder) (map[string]types.AttributeValue, error) {
	x, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return nil, err
	}
	out, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &e.table, Key: evidenceKey(set),
		UpdateExpression: x.Update(), ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values()})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// ClaimProbe reserves the sending of one evidence probe for set, needed to
// move the watermark past need: it succeeds (true) only while the
// watermark is still before need and no probe was sent since need — or
// the last one is older than every (its events were lost; try again). A
// false answer means a probe that serves is already on its way.
func (e *Evidence) ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error) {
	now := e.now().UTC()
	upd := expression.Set(expression.Name("probe_sent_at"), expression.Value(ts(now)))
	cond := expression.Or(expression.AttributeNotExists(expression.Name("watermark")),
		expression.Name("watermark").LessThan(expression.Value(ts(need)))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("probe_sent_at")),
			expression.Name("probe_sent_at").LessThan(expression.Value(ts(need))),
			expression.Name("probe_sent_at").LessThan(expression.Value(ts(now.Add(-every))))))
	_, err := conditionalUpdate(ctx, e.db, e.table, evidenceKey(set), upd, cond, types.ReturnValueNone)
	if errors.Is(err, ErrConflict) {
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
	if _, err := e.update(ctx, set, expression.Remove(expression.Name("probe_sent_at"))); err != nil {
		return fmt.Errorf("forget evidence probe: %w", err)
	}
	return nil
}

// EvidencePath is the evidence watermark's contract as feedback and the
// sweeper use it; Evidence keeps it on DynamoDB, memstore.Evidence in
// memory, storetest.EvidencePath proves them alike.
type EvidencePath interface {
	Advance(ctx context.Context, set string, at time.Time) error
	HoldBack(ctx context.Context, set string, pending map[string]time.Time) error
	Release(ctx context.Context, set string, ids []string) error
	Watermark(ctx context.Context, set string) (time.Time, error)
	ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error)
	State(ctx context.Context, set string) (EvidenceState, error)
}

var _ EvidencePath = (*Evidence)(nil)
