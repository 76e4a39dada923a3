package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Deliveries is the outbox: one item per (changelist, recipient, review
// version), keyed by the deterministic delivery id (R-OUTBOX-1, R-OUTBOX-1).
type Deliveries struct {
	db    *dynamodb.Client
	table string
	now   Clock
	// Retention is how long a row is kept after it is created (DynamoDB
	// TTL on expires_at, R-COST-2); zero keeps rows forever.
	Retention time.Duration
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

// The rendered message is most of a row (an 8–10 KB critique email against
// a few hundred bytes of state), and DynamoDB bills every write to an item
// by the item's size, in 1 KB units: the claim, the mark, each provider
// event and each status change, and the same again for the live index
// while the row is in it. So the row stores its message gzipped, as one
// binary attribute (R-COST-5): the writes that follow bill for about a
// quarter of the size. The message reads back byte for byte (R-OUTBOX-2);
// rows written before hold it as the map attribute "message" and still
// read.
const (
	attrMessage   = "message"
	attrMessageGz = "message_gz"
)

// storedMessage is a message's gzipped JSON form. Its keys are the
// attribute names the map form used, fixed here: renaming a field of
// delivery.Message must not change what stored rows mean.
type storedMessage struct {
	Subject         string `json:"subject"`
	HTML            string `json:"html"`
	Text            string `json:"text"`
	TemplateVersion string `json:"template_version"`
	ContentSHA256   string `json:"content_sha256"`
	UnsubscribeURL  string `json:"unsubscribe_url,omitempty"`
}

// marshalRow is a row's item, its message gzipped.
func marshalRow(r delivery.Row) (map[string]types.AttributeValue, error) {
	item, err := marshal(r)
	if err != nil {
		return nil, err
	}
	m := r.Message
	raw, err := json.Marshal(storedMessage{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL})
	if err != nil {
		return nil, fmt.Errorf("marshal delivery %s message: %w", r.ID, err)
	}
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compress delivery %s message: %w", r.ID, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress delivery %s message: %w", r.ID, err)
	}
	delete(item, attrMessage)
	item[attrMessageGz] = &types.AttributeValueMemberB{Value: z.Bytes()}
	return item, nil
}

// unmarshalRow reads a row in either form: the message gzipped, or (rows
// written before) as a map.
func unmarshalRow(item map[string]types.AttributeValue, r *delivery.Row) error {
	if err := unmarshal(item, r); err != nil {
		return err
	}
	gz, ok := item[attrMessageGz].(*types.AttributeValueMemberB)
	if !ok {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Value))
	if err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	var m storedMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	r.Message = delivery.Message{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL}
	return nil
}

// Ensure creates the row if it does not exist and returns the row as stored:
// the new one, or the existing one unchanged (from ALL_OLD, no second read).
// A row is created once, with its rendered message, before any send; a retry
// never re-renders.
func (s *Deliveries) Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error) {
	item, err := marshalRow(r)
	if err != nil {
		return delivery.Row{}, false, err
	}
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		item["expires_at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)}
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
		if err := unmarshalRow(ccf.Item, &old); err != nil {
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
	return r, unmarshalRow(out.Item, &r)
}

// GetMany reads rows by id (BatchGetItem, strongly consistent), in the
// order given; missing rows are omitted.
func (s *Deliveries) GetMany(ctx context.Context, ids []string) ([]delivery.Row, error) {
	byID := make(map[string]delivery.Row, len(ids))
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, deliveryKey(id))
		}
	}
	if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		var r delivery.Row
		if err := unmarshalRow(item, &r); err != nil {
			return err
		}
		byID[r.ID] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("get deliveries: %w", err)
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

// evidenceAttrs are the attributes that hold provider evidence of a send.
var evidenceAttrs = []string{"provider_message_id", "evidence_send_at", "evidence_delivery_at", "evidence_bounce_at",
	"evidence_complaint_at", "evidence_reject_at"}

// noEvidence is the condition that no provider event names the row.
func noEvidence() expression.ConditionBuilder {
	c := expression.AttributeNotExists(expression.Name(evidenceAttrs[0]))
	for _, a := range evidenceAttrs[1:] {
		c = c.And(expression.AttributeNotExists(expression.Name(a)))
	}
	return c
}

// Claim takes a claimable row for sending in one conditional write: status
// pending or failed_transient → sending, attempts incremented, a lease and a
// claim token set; and only while neither notified_at nor notification_id is
// set (R-OUTBOX-3: "safe to attempt send" only then) and no provider
// evidence names the row: an event recorded since the row was read (a send
// thought lost that showed up after all) settles it instead. The returned
// row is the state after the claim (ALL_NEW): the authoritative re-read
// before send. ErrConflict means the row was not claimable.
//
// The SDK retries UpdateItem: when the claim was written but its answer
// lost, the retry fails the condition on our own write. A conflict is
// therefore read back, and a row that holds our token is ours.
func (s *Deliveries) Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error) {
	now := s.now().UTC()
	upd := sweepRowIn(expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSending)))).
		Add(expression.Name("attempts"), expression.Value(1)).
		Set(expression.Name("lease_until"), expression.Value(ts(now.Add(lease)))).
		Set(expression.Name("claim_token"), expression.Value(token)).
		Set(expression.Name("updated_at"), expression.Value(ts(now)))
	cond := claimableStatus().
		And(expression.AttributeNotExists(expression.Name("notified_at"))).
		And(expression.AttributeNotExists(expression.Name("notification_id"))).
		And(noEvidence())
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == delivery.StatusSending && r.ClaimToken == token
	})
}

// ours resolves a conditional write that failed its condition: when the
// row as it is now shows the write applied (an SDK retry of a write whose
// answer was lost met the write itself), it is the result; otherwise the
// conflict stands.
func (s *Deliveries) ours(ctx context.Context, id string, row delivery.Row, err error, applied func(delivery.Row) bool) (delivery.Row, error) {
	if !errors.Is(err, ErrConflict) {
		return row, err
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return delivery.Row{}, errors.Join(err, gerr)
	}
	if applied(cur) {
		return cur, nil
	}
	return cur, err
}

// MarkSent is step 3 of R-OUTBOX-4: after the provider accepted the send,
// one write sets notification_id, notified_at and status=sent, on condition
// that this worker's claim still holds. A retried write whose first try
// applied is recognised by the message id (see Claim).
func (s *Deliveries) MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSent))).
		Set(expression.Name("notification_id"), expression.Value(notificationID)).
		Set(expression.Name("notified_at"), expression.Value(now)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("last_error_class"))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("claim_token").Equal(expression.Value(token)))
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.NotificationID == notificationID })
}

// Release records a failed send under this worker's claim: failed_transient
// (claim again later) or failed_permanent (operator), with the error class.
func (s *Deliveries) Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error) {
	now := ts(s.now())
	upd := sweepRowOut(expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("last_error_class"), expression.Value(errorClass)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("claim_token").Equal(expression.Value(token)))
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == status && r.ClaimToken == "" && r.LastErrorClass == errorClass
	})
}

// Backfill marks a row sent from provider evidence, without a send: the
// recovery of R-OUTBOX-6 ("if found delivered, backfill notification_id
// and notified_at without resending"). It applies only while notified_at is
// unset.
func (s *Deliveries) Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSent))).
		Set(expression.Name("notification_id"), expression.Value(notificationID)).
		Set(expression.Name("notified_at"), expression.Value(at.UTC().Format(time.RFC3339Nano))).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("last_error_class")).
		Remove(expression.Name(attrSweep))
	cond := expression.AttributeNotExists(expression.Name("notified_at")).
		And(expression.AttributeExists(expression.Name("delivery_id")))
	return s.updateReturn(ctx, id, upd, cond)
}

// Requeue returns a row whose send provably did not happen to
// failed_transient so it can be claimed again: the evidence path has
// caught up past the send and no event names the row (delivery.Settle).
// It applies only to a row still in `sending` past its lease, with no
// provider evidence and no sign of a send (notified_at, notification_id),
// and counts the resend on the row (resent_without_evidence).
func (s *Deliveries) Requeue(ctx context.Context, id string, errorClass string) (delivery.Row, error) {
	now := s.now().UTC()
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusFailedTransient))).
		Set(expression.Name("last_error_class"), expression.Value(errorClass)).
		Set(expression.Name("updated_at"), expression.Value(ts(now))).
		Add(expression.Name("resent_without_evidence"), expression.Value(1)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("evidence_checked_at")).
		Remove(expression.Name(attrSweep))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("lease_until").LessThan(expression.Value(ts(now)))).
		And(expression.AttributeNotExists(expression.Name("notified_at"))).
		And(expression.AttributeNotExists(expression.Name("notification_id"))).
		And(noEvidence())
	return s.updateReturn(ctx, id, upd, cond)
}

// Awaiting notes that a notifier looked at a row held for provider
// evidence (a send whose answer was lost), so the sweeper leaves it to the
// notifier that is already waiting on it (delivery.Row.EvidenceCheckedAt).
func (s *Deliveries) Awaiting(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("evidence_checked_at"), expression.Value(now)).
		Set(expression.Name("last_error_class"), expression.Value("AWAITING_EVIDENCE"))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending)))
	return s.updateReturn(ctx, id, upd, cond)
}

func (s *Deliveries) updateReturn(ctx context.Context, id string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (delivery.Row, error) {
	attrs, err := conditionalUpdate(ctx, s.db, s.table, deliveryKey(id), upd, cond, types.ReturnValueAllNew)
	if err != nil {
		return delivery.Row{}, fmt.Errorf("update delivery %s: %w", id, err)
	}
	var r delivery.Row
	return r, unmarshalRow(attrs, &r)
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

// NotDelivered reports whether the event is provider evidence that the
// message did not reach the reader and may be sent again: a transient
// bounce (SES retried for hours first) or a Reject (SES accepted the call,
// then refused the message and never attempted delivery).
func (e Event) NotDelivered() bool {
	return e.Type == "Reject" || (e.Type == "Bounce" && e.BounceType == "Transient")
}

var eventAttr = map[string]string{
	"Send": "evidence_send_at", "Delivery": "evidence_delivery_at", "Bounce": "evidence_bounce_at",
	"Complaint": "evidence_complaint_at", "Reject": "evidence_reject_at",
}

// EventOutcome says what RecordEvent made of an event.
type EventOutcome int

const (
	// EventRecorded: the event is evidence for the row's send.
	EventRecorded EventOutcome = iota
	// EventDuplicate: the event names a provider message other than the one the
	// row records: the row was sent twice. The message id is kept on the
	// row (duplicate_message_ids); EventDuplicate is reported once per message.
	EventDuplicate
	// EventStale: an event of a send that was found undelivered and sent again
	// (a transient bounce, a Reject): not evidence for the row any more.
	EventStale
	// EventIgnored: an event type that is not evidence (DeliveryDelay, Open...),
	// or a repeat of a duplicate already reported.
	EventIgnored
)

// RecordEvent stores provider evidence on a row: the event's time (first
// one kept), the provider message id, and for a Delivery the `delivered`
// status of a sent row. A row under reconciliation (marked sent with no
// evidence) whose evidence arrives late is returned to `sent`: the provider
// confirms the send.
//
// An event is evidence for the row only if it names the row's message:
// the one the row was marked sent with (notification_id), else the first
// one seen (provider_message_id). An event of another message proves a
// second send of the row; it is never stored as evidence, and the outcome
// says EventDuplicate so the caller alerts. ErrNotFound: no such row.
func (s *Deliveries) RecordEvent(ctx context.Context, id string, e Event) (delivery.Row, EventOutcome, error) {
	attr, ok := eventAttr[e.Type]
	if !ok {
		r, err := s.Get(ctx, id)
		return r, EventIgnored, err
	}
	msg := expression.Value(e.MessageID)
	// A new builder each time: builders share their maps, so one extended
	// for the fast path below must not be the general path's.
	evidence := func() expression.UpdateBuilder {
		upd := expression.Set(expression.Name(attr), expression.IfNotExists(expression.Name(attr), expression.Value(ts(e.At)))).
			Set(expression.Name("provider_message_id"), expression.IfNotExists(expression.Name("provider_message_id"), msg))
		if e.BounceType != "" {
			upd = upd.Set(expression.Name("bounce_type"), expression.Value(e.BounceType))
		}
		return upd
	}
	upd := evidence()
	cond := expression.AttributeExists(expression.Name("delivery_id")).
		And(expression.Or(expression.AttributeNotExists(expression.Name("bounced_message_ids")),
			expression.Not(expression.Contains(expression.Name("bounced_message_ids"), e.MessageID)))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("notification_id")),
			expression.Name("notification_id").Equal(msg))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("provider_message_id")),
			expression.Name("provider_message_id").Equal(msg)))
	// The common case in one write: a sent row's Send or Delivery event of
	// its own message. The general path below records the evidence, then
	// writes the row again to take it out of the live index (Send) or to
	// make it delivered (Delivery); here the same result is one conditional
	// write, which is half the row's write units (R-COST-5). Any other case
	// fails the status condition and takes the general path.
	if fast, ok := sentRowEvent(e.Type, evidence(), s.now()); ok {
		fcond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSent)))
		if e.Type == "Send" {
			fcond = fcond.And(expression.AttributeExists(expression.Name(attrSweep)))
		}
		fcond = fcond.And(cond)
		row, err := s.updateReturn(ctx, id, fast, fcond)
		if !errors.Is(err, ErrConflict) {
			return row, EventRecorded, err
		}
	}
	row, err := s.updateReturn(ctx, id, upd, cond)
	if errors.Is(err, ErrConflict) {
		cur, gerr := s.Get(ctx, id)
		if gerr != nil {
			return delivery.Row{}, EventIgnored, gerr // ErrNotFound when there is no row
		}
		if cur.Bounced(e.MessageID) {
			return cur, EventStale, nil
		}
		return s.recordDuplicate(ctx, cur, e.MessageID)
	}
	if err != nil {
		return row, EventRecorded, err
	}
	next := row.Status
	switch {
	case row.Status == delivery.StatusReconciling && !row.NotifiedAt.IsZero():
		next = delivery.StatusSent
	case row.Status == delivery.StatusSent && e.Type == "Delivery":
		next = delivery.StatusDelivered
	}
	if e.Suppresses() && (next == delivery.StatusSent || next == delivery.StatusDelivered) {
		// A permanent bounce or a complaint makes the delivery
		// `suppressed`. notified_at stays: it was sent once.
		next = delivery.StatusSuppressed
	}
	if next == row.Status {
		if row.Sweep != "" && !live(next) {
			// Confirmed by its provider event: no sweep needs it.
			if _, err := s.updateReturn(ctx, id, sweepRowOut(expression.Set(expression.Name("updated_at"), expression.Value(ts(s.now())))),
				expression.AttributeExists(expression.Name("delivery_id"))); err != nil {
				return row, EventRecorded, err
			}
			row.Sweep = ""
		}
		return row, EventRecorded, nil
	}
	upd2 := expression.Set(expression.Name("status"), expression.Value(string(next)))
	if !live(next) {
		upd2 = sweepRowOut(upd2)
	}
	cond2 := expression.Name("status").Equal(expression.Value(string(row.Status)))
	updated, err := s.updateReturn(ctx, id, upd2, cond2)
	if errors.Is(err, ErrConflict) {
		cur, gerr := s.Get(ctx, id)
		return cur, EventRecorded, gerr
	}
	return updated, EventRecorded, err
}

// sentRowEvent is RecordEvent's one-write update for a row in `sent`:
// for a Send event, the evidence and the row out of the live index (a
// sent row with evidence needs no sweep), as the general path's second
// write does, updated_at included; for a Delivery event, the evidence and
// status delivered, out of the index. Other events: none.
func sentRowEvent(typ string, evidence expression.UpdateBuilder, now time.Time) (expression.UpdateBuilder, bool) {
	switch typ {
	case "Send":
		return sweepRowOut(evidence.Set(expression.Name("updated_at"), expression.Value(ts(now)))), true
	case "Delivery":
		return sweepRowOut(evidence.Set(expression.Name("status"), expression.Value(string(delivery.StatusDelivered)))), true
	}
	return evidence, false
}

// recordDuplicate keeps the message id of a second send of the row, and
// reports EventDuplicate only the first time that id is seen (a Send and a
// Delivery event of the same duplicate, or a redelivered event, count
// once).
func (s *Deliveries) recordDuplicate(ctx context.Context, cur delivery.Row, messageID string) (delivery.Row, EventOutcome, error) {
	if messageID == cur.NotificationID || (cur.NotificationID == "" && messageID == cur.ProviderMessageID) {
		return cur, EventIgnored, nil // raced with a write that made it the row's own
	}
	upd := expression.Add(expression.Name("duplicate_message_ids"), expression.Value(&types.AttributeValueMemberSS{Value: []string{messageID}}))
	cond := expression.AttributeExists(expression.Name("delivery_id")).
		And(expression.Or(expression.AttributeNotExists(expression.Name("duplicate_message_ids")),
			expression.Not(expression.Contains(expression.Name("duplicate_message_ids"), messageID))))
	row, err := s.updateReturn(ctx, cur.ID, upd, cond)
	if errors.Is(err, ErrConflict) {
		return cur, EventIgnored, nil // already recorded
	}
	if err != nil {
		return cur, EventIgnored, err
	}
	return row, EventDuplicate, nil
}

// RecordDuplicate keeps on the row the message id of a send the notifier
// made although the row already carried evidence of another (seen when it
// marked the row sent), reporting whether it was new.
func (s *Deliveries) RecordDuplicate(ctx context.Context, r delivery.Row, messageID string) (bool, error) {
	_, out, err := s.recordDuplicate(ctx, delivery.Row{ID: r.ID}, messageID)
	return out == EventDuplicate, err
}

// Skip settles a row that was never sent as terminal without a send
// (suppressed or skipped_unsubscribed): only while it is claimable and
// carries no sign of a send (no notification id, no notified_at, no provider
// evidence), so a row in flight is never relabelled.
func (s *Deliveries) Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("skip_reason"), expression.Value(reason)).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now())))
	cond := claimableStatus().
		And(expression.AttributeNotExists(expression.Name("notified_at"))).
		And(expression.AttributeNotExists(expression.Name("notification_id"))).
		And(noEvidence())
	return s.updateReturn(ctx, id, upd, cond)
}

// ResendAfterNotDelivered returns a row to failed_transient after provider
// evidence that its send did not reach the reader (Event.NotDelivered: a
// transient bounce, a Reject), so the notifier sends it again: the delivery
// protocol's "failed_transient ─► claim again", and R-RECON-2
// ("if not delivered, clear sent markers and requeue"). It applies
//
//   - to a row sent, delivered or under reconciliation whose recorded
//     message is the one the event names (a late event of an earlier send
//     changes nothing), or
//   - to a row still in `sending` from a send whose answer was lost (no
//     notification_id), its lease expired, whose first seen message (if
//     any) is the one the event names: the bounce is the only evidence of
//     that send, and it says the reader has no copy;
//
// and only while fewer than max resends were made. The send marks and
// evidence are cleared, so reconciliation does not take the old send for
// the new one; the message id joins bounced_message_ids, so its later
// events are ignored; last_bounce_at and bounce_resends remain.
func (s *Deliveries) ResendAfterNotDelivered(ctx context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error) {
	now := s.now().UTC()
	msg := expression.Value(providerMessageID)
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusFailedTransient))).
		Set(expression.Name("last_error_class"), expression.Value(errorClass)).
		Set(expression.Name("last_bounce_at"), expression.Value(ts(at))).
		Set(expression.Name("updated_at"), expression.Value(ts(now))).
		Add(expression.Name("bounce_resends"), expression.Value(1)).
		Add(expression.Name("bounced_message_ids"), expression.Value(&types.AttributeValueMemberSS{Value: []string{providerMessageID}}))
	for _, a := range append([]string{"notified_at", "notification_id", "bounce_type", "lease_until", "claim_token", "evidence_checked_at", attrSweep}, evidenceAttrs...) {
		upd = upd.Remove(expression.Name(a))
	}
	wasSent := expression.Name("status").In(expression.Value(string(delivery.StatusSent)), expression.Value(string(delivery.StatusDelivered)),
		expression.Value(string(delivery.StatusReconciling))).
		And(expression.Name("notification_id").Equal(msg))
	lostAnswer := expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.AttributeNotExists(expression.Name("notification_id"))).
		And(expression.Name("lease_until").LessThan(expression.Value(ts(now)))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("provider_message_id")),
			expression.Name("provider_message_id").Equal(msg)))
	cond := expression.Or(wasSent, lostAnswer).
		And(expression.Or(expression.AttributeNotExists(expression.Name("bounce_resends")),
			expression.Name("bounce_resends").LessThan(expression.Value(max))))
	return s.updateReturn(ctx, id, upd, cond)
}

// MarkReconciling moves a row that was marked sent but has no provider
// evidence, once the evidence path has caught up past its send, into
// reconciliation (R-RECON-1: "it MUST transition that row into a
// reconciliation workflow before any further sends"). It applies only
// while the row is still sent, still without evidence, and not resolved as
// sent by an operator.
func (s *Deliveries) MarkReconciling(ctx context.Context, id string) (delivery.Row, error) {
	upd := sweepRowIn(expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusReconciling))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now()))))
	cond := expression.Name("status").Equal(expression.Value(string(delivery.StatusSent))).
		And(expression.AttributeNotExists(expression.Name("evidence_send_at"))).
		And(expression.AttributeNotExists(expression.Name("evidence_delivery_at"))).
		And(notResolvedSent())
	return s.updateReturn(ctx, id, upd, cond)
}

// ResolveSent is an operator's verdict on a held row: the message did go
// out (the operator checked SES or asked the reader). A row under
// reconciliation returns to `sent` with its marks; a row held in `sending`
// is marked sent now, without a provider message id. Either is never sent
// again. It applies only to those two states.
func (s *Deliveries) ResolveSent(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusSent))).
		Set(expression.Name("notified_at"), expression.IfNotExists(expression.Name("notified_at"), expression.Value(now))).
		Set(expression.Name("resolution"), expression.Value(delivery.ResolvedSent)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("last_error_class")).
		Remove(expression.Name(attrSweep))
	cond := expression.Name("status").In(expression.Value(string(delivery.StatusReconciling)), expression.Value(string(delivery.StatusSending))).
		And(expression.Or(expression.Name("status").Equal(expression.Value(string(delivery.StatusReconciling))),
			expression.Name("lease_until").LessThan(expression.Value(now))))
	return s.updateReturn(ctx, id, upd, cond)
}

// ClearAndRequeue is an operator's verdict on a held row: the message did
// not go out. The sent markers (notified_at, notification_id) are cleared
// and the row returns to failed_transient to be sent again — R-OUTBOX-6
// row 2. It applies only to a row under reconciliation, or held in
// `sending` past its lease, and never when provider evidence names it
// (that evidence settles the row instead).
func (s *Deliveries) ClearAndRequeue(ctx context.Context, id string) (delivery.Row, error) {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(delivery.StatusFailedTransient))).
		Set(expression.Name("last_error_class"), expression.Value("OPERATOR_REQUEUE")).
		Set(expression.Name("resolution"), expression.Value(delivery.ResolvedRequeued)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Remove(expression.Name("notified_at")).Remove(expression.Name("notification_id")).
		Remove(expression.Name("lease_until")).Remove(expression.Name("claim_token")).Remove(expression.Name("evidence_checked_at")).
		Remove(expression.Name(attrSweep))
	cond := expression.Name("status").In(expression.Value(string(delivery.StatusReconciling)), expression.Value(string(delivery.StatusSending))).
		And(expression.Or(expression.Name("status").Equal(expression.Value(string(delivery.StatusReconciling))),
			expression.Name("lease_until").LessThan(expression.Value(now)))).
		And(noEvidence())
	return s.updateReturn(ctx, id, upd, cond)
}

// Unsettled calls fn for every row that may need a hand from outside its
// notifier (delivery.Row.Unsettled). It reads the live index (index.go),
// not the table's history: the index holds the live rows' keys only, so
// the rows are then read whole, strongly consistent (batchGet), and each
// checked as it is now. A sweep reads about twice the live rows, whatever
// the table holds (R-COST-1).
func (s *Deliveries) Unsettled(ctx context.Context, sentBefore time.Time, fn func(delivery.Row) error) error {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(attrSweep).Equal(expression.Value(sweepRow))).Build()
	if err != nil {
		return fmt.Errorf("build unsettled query: %w", err)
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{TableName: &s.table, IndexName: aws.String(IndexLiveDeliveries),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query unsettled deliveries: %w", err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
		for _, item := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{"delivery_id": item["delivery_id"]})
		}
		var rows []delivery.Row
		if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
			var r delivery.Row
			if err := unmarshalRow(item, &r); err != nil {
				return err
			}
			if r.Unsettled(sentBefore) {
				rows = append(rows, r)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read unsettled deliveries: %w", err)
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// notResolvedSent: no operator resolved the row as sent. Such a row has
// no provider event and never will; the operator's verdict stands.
func notResolvedSent() expression.ConditionBuilder {
	return expression.Or(expression.AttributeNotExists(expression.Name("resolution")),
		expression.Name("resolution").NotEqual(expression.Value(delivery.ResolvedSent)))
}

// Outbox is the outbox's contract: what notify, feedback, the sweeper and
// the operator do with delivery rows. Deliveries keeps it on DynamoDB and
// memstore.Deliveries in memory; storetest.Outbox proves them alike
// (R-STORE-1).
type Outbox interface {
	Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error)
	Get(ctx context.Context, id string) (delivery.Row, error)
	GetMany(ctx context.Context, ids []string) ([]delivery.Row, error)
	Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error)
	MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error)
	Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error)
	Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error)
	Requeue(ctx context.Context, id string, errorClass string) (delivery.Row, error)
	Awaiting(ctx context.Context, id string) (delivery.Row, error)
	RecordEvent(ctx context.Context, id string, e Event) (delivery.Row, EventOutcome, error)
	RecordDuplicate(ctx context.Context, r delivery.Row, messageID string) (bool, error)
	Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error)
	ResendAfterNotDelivered(ctx context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error)
	MarkReconciling(ctx context.Context, id string) (delivery.Row, error)
	ResolveSent(ctx context.Context, id string) (delivery.Row, error)
	ClearAndRequeue(ctx context.Context, id string) (delivery.Row, error)
	Unsettled(ctx context.Context, sentBefore time.Time, fn func(delivery.Row) error) error
}

var _ Outbox = (*Deliveries)(nil)
