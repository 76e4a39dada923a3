package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// eventAttr is the attribute that keeps the time of each evidence event
// type (the first one seen).
var eventAttr = map[string]string{
	"Send": attrEvidenceSendAt, "Delivery": attrEvidenceDeliveryAt, "Bounce": attrEvidenceBounceAt,
	"Complaint": attrEvidenceComplaintAt, "Reject": attrEvidenceRejectAt,
}

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
func (s *Deliveries) RecordEvent(ctx context.Context, id string, e store.Event) (delivery.Row, store.EventOutcome, error) {
	attr, ok := eventAttr[e.Type]
	if !ok {
		r, err := s.Get(ctx, id)
		return r, store.EventIgnored, err
	}
	msg := expression.Value(e.MessageID)
	// A new builder each time: builders share their maps, so one extended
	// for the fast path below must not be the general path's.
	evidence := func() expression.UpdateBuilder {
		upd := expression.Set(expression.Name(attr), expression.IfNotExists(expression.Name(attr), expression.Value(ts(e.At)))).
			Set(expression.Name(attrProviderMessageID), expression.IfNotExists(expression.Name(attrProviderMessageID), msg))
		if e.BounceType != "" {
			upd = upd.Set(expression.Name(attrBounceType), expression.Value(e.BounceType))
		}
		return upd
	}
	upd := evidence()
	cond := rowExists().
		And(notInSet(attrBouncedMessageIDs, e.MessageID)).
		And(notSetOrEqual(attrNotificationID, msg)).
		And(notSetOrEqual(attrProviderMessageID, msg))
	// The common case in one write: a sent row's Send or Delivery event of
	// its own message. The general path below records the evidence, then
	// writes the row again to take it out of the live index (Send) or to
	// make it delivered (Delivery); here the same result is one conditional
	// write, which is half the row's write units (R-COST-5). Any other case
	// fails the status condition and takes the general path.
	if fast, ok := sentRowEvent(e.Type, evidence(), s.now()); ok {
		fcond := statusIs(delivery.StatusSent)
		if e.Type == "Send" {
			fcond = fcond.And(expression.AttributeExists(expression.Name(schema.Sweep)))
		}
		fcond = fcond.And(cond)
		row, err := s.updateReturn(ctx, id, fast, fcond)
		if !errors.Is(err, store.ErrConflict) {
			return row, store.EventRecorded, err
		}
	}
	row, err := s.updateReturn(ctx, id, upd, cond)
	if errors.Is(err, store.ErrConflict) {
		cur, gerr := s.Get(ctx, id)
		if gerr != nil {
			return delivery.Row{}, store.EventIgnored, gerr // ErrNotFound when there is no row
		}
		if cur.Bounced(e.MessageID) {
			return cur, store.EventStale, nil
		}
		return s.recordDuplicate(ctx, cur, e.MessageID)
	}
	if err != nil {
		return row, store.EventRecorded, err
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
			if _, err := s.updateReturn(ctx, id, sweepRowOut(expression.Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))),
				rowExists()); err != nil {
				return row, store.EventRecorded, err
			}
			row.Sweep = ""
		}
		return row, store.EventRecorded, nil
	}
	upd2 := setStatus(next)
	if !live(next) {
		upd2 = sweepRowOut(upd2)
	}
	cond2 := statusIs(row.Status)
	updated, err := s.updateReturn(ctx, id, upd2, cond2)
	if errors.Is(err, store.ErrConflict) {
		cur, gerr := s.Get(ctx, id)
		return cur, store.EventRecorded, gerr
	}
	return updated, store.EventRecorded, err
}

// sentRowEvent is RecordEvent's one-write update for a row in `sent`:
// for a Send event, the evidence and the row out of the live index (a
// sent row with evidence needs no sweep), as the general path's second
// write does, updated_at included; for a Delivery event, the evidence and
// status delivered, out of the index. Other events: none.
func sentRowEvent(typ string, evidence expression.UpdateBuilder, now time.Time) (expression.UpdateBuilder, bool) {
	switch typ {
	case "Send":
		return sweepRowOut(evidence.Set(expression.Name(attrUpdatedAt), expression.Value(ts(now)))), true
	case "Delivery":
		return sweepRowOut(evidence.Set(expression.Name(attrStatus), expression.Value(string(delivery.StatusDelivered)))), true
	}
	return evidence, false
}

// recordDuplicate keeps the message id of a second send of the row, and
// reports EventDuplicate only the first time that id is seen (a Send and a
// Delivery event of the same duplicate, or a redelivered event, count
// once).
func (s *Deliveries) recordDuplicate(ctx context.Context, cur delivery.Row, messageID string) (delivery.Row, store.EventOutcome, error) {
	if messageID == cur.NotificationID || (cur.NotificationID == "" && messageID == cur.ProviderMessageID) {
		return cur, store.EventIgnored, nil // raced with a write that made it the row's own
	}
	upd := expression.Add(expression.Name(attrDuplicateMessageIDs), expression.Value(&types.AttributeValueMemberSS{Value: []string{messageID}}))
	cond := rowExists().And(notInSet(attrDuplicateMessageIDs, messageID))
	row, err := s.updateReturn(ctx, cur.ID, upd, cond)
	if errors.Is(err, store.ErrConflict) {
		return cur, store.EventIgnored, nil // already recorded
	}
	if err != nil {
		return cur, store.EventIgnored, err
	}
	return row, store.EventDuplicate, nil
}

// RecordDuplicate keeps on the row the message id of a send the notifier
// made although the row already carried evidence of another (seen when it
// marked the row sent), reporting whether it was new.
func (s *Deliveries) RecordDuplicate(ctx context.Context, r delivery.Row, messageID string) (bool, error) {
	_, out, err := s.recordDuplicate(ctx, delivery.Row{ID: r.ID}, messageID)
	return out == store.EventDuplicate, err
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
	now := ts(s.now())
	msg := expression.Value(providerMessageID)
	upd := setStatus(delivery.StatusFailedTransient).
		Set(expression.Name(attrLastErrorClass), expression.Value(errorClass)).
		Set(expression.Name(attrLastBounceAt), expression.Value(ts(at))).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Add(expression.Name(attrBounceResends), expression.Value(1)).
		Add(expression.Name(attrBouncedMessageIDs), expression.Value(&types.AttributeValueMemberSS{Value: []string{providerMessageID}}))
	upd = remove(upd, attrNotifiedAt, attrNotificationID, attrBounceType, attrLeaseUntil, attrClaimToken, attrEvidenceCheckedAt, schema.Sweep)
	upd = remove(upd, evidenceAttrs...)
	wasSent := statusIn([]delivery.Status{delivery.StatusSent, delivery.StatusDelivered, delivery.StatusReconciling}).
		And(expression.Name(attrNotificationID).Equal(msg))
	lostAnswer := statusIs(delivery.StatusSending).
		And(notSet(attrNotificationID)).
		And(leaseExpired(now)).
		And(notSetOrEqual(attrProviderMessageID, msg))
	cond := expression.Or(wasSent, lostAnswer).
		And(expression.Or(notSet(attrBounceResends), expression.Name(attrBounceResends).LessThan(expression.Value(max))))
	return s.updateReturn(ctx, id, upd, cond)
}
