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

	"github.com/criticizer/criticizer/internal/delivery"
)

// Deliveries is the outbox: one item per (changelist, recipient, review
// version), keyed by the deterministic delivery id (seed 000 §6.3, §10.2).
type Deliveries struct {
	db    *dynamodb.Client
	table string
	now   Clock
}

// NewDeliveries returns the outbox repository for table.
func NewDeliveries(db *dynamodb.Client, table string, now Clock) *Deliveries {
	if now == nil {
		now = time.Now
	}
	return &Deliveries{db: db, table: table, now: now}
}

func deliveryKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"delivery_id": str(id)}
}

// Ensure creates the row if it does not exist and returns the row as stored:
// the new one, or the existing one unchanged (from ALL_OLD, no second read).
// A row is created once, with its rendered message, before any send; a retry
// never re-renders.
func (s *Deliveries) Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error) {
	item, err := marshal(r)
	if err != nil {
		return delivery.Row{}, false, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(delivery_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return r, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		var old delivery.Row
		if err := unmarshal(ccf.Item, &old); err != nil {
			return delivery.Row{}, false, err
		}
		return old, false, nil
	}
	return delivery.Row{}, false, fmt.Errorf("ensure delivery %s: %w", r.ID, err)
}

// Get reads a row with a strongly consistent read.
func (s *Deliveries) Get(ctx context.Context, id string) (delivery.Row, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: deliveryKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return delivery.Row{}, fmt.Errorf("get delivery %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return delivery.Row{}, fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	var r delivery.Row
	return r, unmarshal(out.Item, &r)
}

// GetMany reads rows by id (BatchGetItem, strongly consistent), in the
// order given; missing rows are omitted.
func (s *Deliveries) GetMany(ctx context.Context, ids []string) ([]delivery.Row, error) {
	byID := make(map[string]delivery.Row, len(ids))
	for start := 0; start < len(ids); start += 100 {
		end := min(start+100, len(ids))
		keys := make([]map[string]types.AttributeValue, 0, end-start)
		seen := map[string]bool{}
		for _, id := range ids[start:end] {
			if !seen[id] {
				seen[id] = true
				keys = append(keys, deliveryKey(id))
			}
		}
		req := map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		for len(req) > 0 {
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("batch get deliveries: %w", err)
			}
			for _, item := range out.Responses[s.table] {
				var r delivery.Row
				if err := unmarshal(item, &r); err != nil {
					return nil, err
				}
				byID[r.ID] = r
			}
			req = out.UnprocessedKeys
		}
	}
	rows := make([]delivery.Row, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			rows = append(rows, r)
			delete(byID, id)
		}
	}
	return rows, nil
}

// Claim takes a claimable row for sending in one conditional write: status
// pending or failed_transient → sending, attempts incremented, a lease and a
// claim token set; and only while neither notified_at nor notification_id is
// set (seed 000 §6.4: "safe to attempt send" only then). The returned row is
// the state after the claim (ALL_NEW): the authoritative re-read before send.
// ErrConflict means the row was not claimable.
func (s *Deliveries) Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error) {
	now := s.now().UTC()
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSending))).
		Add(expression.Name("attempts"), expression.Value(1)).
		Set(expression.Name("lease_until"), expression.Value(ts(now.Add(lease)))).
		Set(expression.Name("claim_token"), expression.Value(token)).
		Set(expression.Name("updated_at"), expression.Value(ts(now)))
	cond := expression.Name("status").In(expression.Value(string(delivery.StatusPending)), expression.Value(string(delivery.StatusFailedTransient))).
		And(expression.AttributeNotExists(expression.Name("notified_at"))).
		And(expression.AttributeNotExists(expression.Name("notification_id")))
	return s.updateReturn(ctx, id, upd, cond)
}

// MarkSent is step 3 of seed 000 §6.4: after the provider accepted the send,
// one write sets notification_id, notified_at and status=sent, on condition
// that this worker's claim still holds.
func (s *Deliveries) MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSent))).
		Set(expression.Name("notification_id"), expression.Value(notificationID)).
		Set(expression.Name("notified_at"), expression.Value(now)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("last_error_class"))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("claim_token").Equal(expression.Value(token)))
	return s.updateReturn(ctx, id, upd, cond)
}

// Release records a failed send under this worker's claim: failed_transient
// (claim again later) or failed_permanent (operator), with the error class.
func (s *Deliveries) Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("last_error_class"), expression.Value(errorClass)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token"))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("claim_token").Equal(expression.Value(token)))
	return s.updateReturn(ctx, id, upd, cond)
}

// Backfill marks a row sent from provider evidence, without a send: the
// recovery of seed 000 §8.2 ("if found delivered, backfill notification_id
// and notified_at without resending"). It applies only while notified_at is
// unset.
func (s *Deliveries) Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSent))).
		Set(expression.Name("notification_id"), expression.Value(notificationID)).
		Set(expression.Name("notified_at"), expression.Value(at.UTC().Format(time.RFC3339Nano))).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token"))
	cond := expression.AttributeNotExists(expression.Name("notified_at")).
		And(expression.AttributeExists(expression.Name("delivery_id")))
	return s.updateReturn(ctx, id, upd, cond)
}

// Requeue returns a row whose send provably did not happen (no provider
// evidence after the grace window) to failed_transient so it can be claimed
// again. It applies only to a row in `sending` whose lease expired, or in
// `reconciling`, and never to one with notified_at.
func (s *Deliveries) Requeue(ctx context.Context, id string, errorClass string) (delivery.Row, error) {
	now := s.now().UTC()
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusFailedTransient))).
		Set(expression.Name("last_error_class"), expression.Value(errorClass)).
		Set(expression.Name("updated_at"), expression.Value(ts(now))).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("notification_id"))
	cond := expression.AttributeNotExists(expression.Name("notified_at")).And(
		expression.Name("status").Equal(expression.Value(string(delivery.StatusReconciling))).Or(
			expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
				And(expression.Name("lease_until").LessThan(expression.Value(ts(now))))))
	return s.updateReturn(ctx, id, upd, cond)
}

func (s *Deliveries) updateReturn(ctx context.Context, id string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (delivery.Row, error) {
	attrs, err := conditionalUpdate(ctx, s.db, s.table, deliveryKey(id), upd, cond, types.ReturnValueAllNew)
	if err != nil {
		return delivery.Row{}, fmt.Errorf("update delivery %s: %w", id, err)
	}
	var r delivery.Row
	return r, unmarshal(attrs, &r)
}

// Event is one provider event for a delivery row.
type Event struct {
	Type       string // SES eventType
	MessageID  string
	At         time.Time
	BounceType string
}

// Suppresses reports whether the event suppresses the address: a complaint,
// or a permanent bounce (which includes SES's own "OnAccountSuppressionList"
// and "OnSuppressionList" bounces for an address already suppressed). A
// transient bounce does not: the address may work tomorrow.
func (e Event) Suppresses() bool {
	return e.Type == "Complaint" || (e.Type == "Bounce" && e.BounceType == "Permanent")
}

var eventAttr = map[string]string{
	"Send": "evidence_send_at", "Delivery": "evidence_delivery_at", "Bounce": "evidence_bounce_at",
	"Complaint": "evidence_complaint_at", "Reject": "evidence_reject_at",
}

// RecordEvent stores provider evidence on a row: the event's time (first
// one kept), the provider message id, and for a Delivery the `delivered`
// status of a sent row. A row under reconciliation (marked sent with no
// evidence) whose evidence arrives late is returned to `sent`: the provider
// confirms the send. Unknown event types are counted, not stored.
func (s *Deliveries) RecordEvent(ctx context.Context, id string, e Event) (delivery.Row, error) {
	attr, ok := eventAttr[e.Type]
	if !ok {
		return s.Get(ctx, id)
	}
	upd := expression.Set(expression.Name(attr), expression.IfNotExists(expression.Name(attr), expression.Value(ts(e.At)))).
		Set(expression.Name("provider_message_id"), expression.IfNotExists(expression.Name("provider_message_id"), expression.Value(e.MessageID)))
	if e.BounceType != "" {
		upd = upd.Set(expression.Name("bounce_type"), expression.Value(e.BounceType))
	}
	// An event of a message that bounced transiently and was sent again is
	// not evidence for the row any more: SNS does not keep order, and a late
	// Send or Delivery of the old message must not settle the resend.
	cond := expression.AttributeExists(expression.Name("delivery_id")).
		And(expression.Or(expression.AttributeNotExists(expression.Name("bounced_message_ids")),
			expression.Not(expression.Contains(expression.Name("bounced_message_ids"), e.MessageID))))
	row, err := s.updateReturn(ctx, id, upd, cond)
	if errors.Is(err, ErrConflict) {
		cur, gerr := s.Get(ctx, id)
		if gerr != nil {
			return delivery.Row{}, gerr // ErrNotFound when there is no row
		}
		return cur, nil
	}
	if err != nil {
		return row, err
	}
	next := row.Status
	switch {
	case row.Status == delivery.StatusReconciling && !row.NotifiedAt.IsZero():
		next = delivery.StatusSent
	case row.Status == delivery.StatusSent && e.Type == "Delivery":
		next = delivery.StatusDelivered
	}
	if e.Suppresses() && (next == delivery.StatusSent || next == delivery.StatusDelivered) {
		// Seed 004 Phase 7: a permanent bounce or a complaint makes the
		// delivery `suppressed`. notified_at stays: it was sent once.
		next = delivery.StatusSuppressed
	}
	if next == row.Status {
		return row, nil
	}
	upd2 := expression.Set(expression.Name("status"), expression.Value(string(next)))
	cond2 := expression.Name("status").Equal(expression.Value(string(row.Status)))
	updated, err := s.updateReturn(ctx, id, upd2, cond2)
	if errors.Is(err, ErrConflict) {
		return s.Get(ctx, id)
	}
	return updated, err
}

// Skip settles a row that was never sent as terminal without a send
// (suppressed or skipped_unsubscribed): only while it is claimable and
// carries no sign of a send (no notification id, no notified_at, no provider
// evidence), so a row in flight is never relabelled.
func (s *Deliveries) Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("skip_reason"), expression.Value(reason)).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now())))
	cond := expression.Name("status").In(expression.Value(string(delivery.StatusPending)), expression.Value(string(delivery.StatusFailedTransient))).
		And(expression.AttributeNotExists(expression.Name("notified_at"))).
		And(expression.AttributeNotExists(expression.Name("notification_id"))).
		And(expression.AttributeNotExists(expression.Name("evidence_send_at"))).
		And(expression.AttributeNotExists(expression.Name("evidence_delivery_at")))
	return s.updateReturn(ctx, id, upd, cond)
}

// ResendAfterBounce returns a sent row to failed_transient after a transient
// bounce of its latest send, so the notifier sends it again (the delivery
// protocol's "failed_transient ─► retry: claim again"): SES already retried
// delivery for hours before reporting the bounce, so the reader has no copy.
// It applies only while the row is sent or delivered, the bounce is of the
// message the row records (providerMessageID; a late bounce of an earlier
// send changes nothing), and fewer than max resends were made. The send
// marks and evidence are cleared, so reconciliation does not take the old
// send for the new one; last_bounce_at and bounce_resends remain.
func (s *Deliveries) ResendAfterBounce(ctx context.Context, id, providerMessageID string, at time.Time, max int) (delivery.Row, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusFailedTransient))).
		Set(expression.Name("last_error_class"), expression.Value("TRANSIENT_BOUNCE")).
		Set(expression.Name("last_bounce_at"), expression.Value(ts(at))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now()))).
		Add(expression.Name("bounce_resends"), expression.Value(1)).
		Add(expression.Name("bounced_message_ids"), expression.Value(&types.AttributeValueMemberSS{Value: []string{providerMessageID}}))
	for _, a := range []string{"notified_at", "notification_id", "provider_message_id", "evidence_send_at",
		"evidence_delivery_at", "evidence_bounce_at", "bounce_type", "lease_until", "claim_token"} {
		upd = upd.Remove(expression.Name(a))
	}
	cond := expression.Name("status").In(expression.Value(string(delivery.StatusSent)), expression.Value(string(delivery.StatusDelivered))).
		And(expression.Name("notification_id").Equal(expression.Value(providerMessageID))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("bounce_resends")),
			expression.Name("bounce_resends").LessThan(expression.Value(max))))
	return s.updateReturn(ctx, id, upd, cond)
}

// MarkReconciling moves a row that was marked sent but has no provider
// evidence into reconciliation (seed 000 §8.3: "it MUST transition that row
// into a reconciliation workflow before any further sends"). It applies
// only while the row is still sent and still without evidence.
func (s *Deliveries) MarkReconciling(ctx context.Context, id string) (delivery.Row, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusReconciling))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now())))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSent))).
		And(expression.AttributeNotExists(expression.Name("evidence_send_at"))).
		And(expression.AttributeNotExists(expression.Name("evidence_delivery_at")))
	return s.updateReturn(ctx, id, upd, cond)
}

// Scan pages through every row matching filter (a sweeper's query; the
// deliveries table is keyed by id only).
func (s *Deliveries) Scan(ctx context.Context, filter expression.ConditionBuilder, fn func(delivery.Row) error) error {
	return scan(ctx, s.db, s.table, filter, func(item map[string]types.AttributeValue) error {
		var r delivery.Row
		if err := unmarshal(item, &r); err != nil {
			return err
		}
		return fn(r)
	})
}
