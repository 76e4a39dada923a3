package sesevent

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Handler is the feedback function: it records SES events on the delivery
// rows they name, as provider evidence for reconciliation (R-OUTBOX-6),
// and the newest event time of each configuration set, half of what the
// notifier settles lost answers by (the drain time is the other,
// internal/drain).
type Handler struct {
	Deliveries Deliveries
	// Evidence keeps the newest event time per configuration set. Nil:
	// not kept (the notifier then never resends a send whose answer was
	// lost).
	Evidence Evidence
	// Bound is the publish bound the evidence rule assumes
	// (CRITICIZER_EVIDENCE_MARGIN): a Send event that reached the queue
	// later than Bound after SES accepted its message is counted and
	// logged as an error (LateSendEvents, R-EVIDENCE-7); it is the one
	// case where a second email is possible. Zero: not measured.
	Bound time.Duration
	// Budget is the invocation's time per record (internal/deadline): a
	// record is started only while one's Need fits before the Reserve.
	Budget deadline.Budget
	// Recipients receives suppressions: a permanent bounce or a complaint
	// stops every later send to the address. Nil: not recorded.
	Recipients Suppressor
	// Jobs and Queue send a row again after provider evidence that it was
	// not delivered (a transient bounce): the job is reopened at notify
	// and a notify message enqueued; mark the job of a rejected row
	// needs_intervention; and revive the quiet rows that stood on a row a
	// Reject or a bounce undid (R-QUIET-4), their jobs reopened the same
	// way. Nil: such events are only recorded.
	Jobs  Reopener
	Queue Enqueuer
	// MaxBounceResends bounds the resends of one delivery after evidence
	// that it was not delivered (default 2): a mailbox that stays full is
	// not mailed forever.
	MaxBounceResends int
	// Quarantine keeps a copy of each record that can never be evidence
	// before it is acknowledged (R-EVIDENCE-10). Nil: such a record fails,
	// and the redrive policy moves it to the feedback DLQ.
	Quarantine Quarantine
	Log        *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// advanced is, per configuration set, the newest event time this
	// instance has seen Evidence.Advance accept: the stored time is at
	// or past it (it only moves forward), so an Advance to a time not
	// after it would fail its condition, and is not sent (a refused
	// conditional write is billed all the same: a Delivery event carries
	// its Send's mail.timestamp, and each arrives in a batch of its own).
	mu       sync.Mutex
	advanced map[string]time.Time
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Deliveries is what feedback does with delivery rows (store.Deliveries).
type Deliveries interface {
	Get(ctx context.Context, id string) (delivery.Row, error)
	RecordEvent(ctx context.Context, id string, e store.Event) (delivery.Row, store.EventOutcome, error)
	ResendAfterNotDelivered(ctx context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error)
	Reject(ctx context.Context, id, providerMessageID string, at time.Time) (delivery.Row, error)
	Revive(ctx context.Context, id, on string) (delivery.Row, error)
}

// Evidence keeps the newest event time (store.Evidence).
type Evidence interface {
	Advance(ctx context.Context, set string, at time.Time) error
}

// Suppressor records suppressions (store.Recipients).
type Suppressor interface {
	Suppress(ctx context.Context, recipientID, reason string, at time.Time) error
}

// Reopener puts a finished job back at notify, or marks it for a person
// (store.Jobs). A role interface because the explorer interposes on
// these calls, and because feedback writes a job in no other way.
type Reopener interface {
	Reopen(ctx context.Context, id job.ID) error
	Intervene(ctx context.Context, id job.ID) error
}

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Handle processes a batch from the feedback queue. A record that cannot
// be stored is reported as a batch item failure and retried; one that is
// not an SES event is quarantined — a copy kept in the payload bucket —
// and acknowledged, so that the feedback DLQ holds only events that
// failed and can be retried (R-EVIDENCE-10); SES's own validation notice
// is acknowledged (IsValidationNotice). A
// record after the first is started only while Budget allows: it and the
// rest are reported as failures, to come back whole, rather than lose the
// whole batch to Lambda's timeout.
//
// Once a record is stored its message is deleted (the event source
// mapping deletes what is not reported), and the newest event time moves
// to the newest event recorded. A record that fails stays in the queue or
// its DLQ, which keeps the drain time (internal/drain) before it: that
// event may be the only evidence that a send happened. Nothing here is
// keyed by the SQS message id, which a redrive changes.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	fail := func(id string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	newest := map[string]time.Time{} // set → newest event recorded
	plan := h.Budget.Plan(ctx)
	for i, rec := range ev.Records {
		if i > 0 && !plan.Allows() {
			for _, r := range ev.Records[i:] {
				fail(r.MessageId)
			}
			h.Log.WarnContext(ctx, "invocation near its deadline; records left for the next", "left", len(ev.Records)-i)
			break
		}
		if IsValidationNotice([]byte(rec.Body)) {
			h.Log.InfoContext(ctx, "SES validated the events topic; notice acknowledged", "message_id", rec.MessageId)
			continue
		}
		e, err := Parse([]byte(rec.Body))
		if err != nil {
			if qerr := h.quarantine(ctx, rec, err); qerr != nil {
				h.Log.WarnContext(ctx, "feedback record is not an SES event, and was not quarantined", "message_id", rec.MessageId, "error", qerr)
				fail(rec.MessageId)
			}
			continue
		}
		if err := h.record(ctx, e); err != nil {
			h.Log.WarnContext(ctx, "feedback event not recorded", "message_id", rec.MessageId, "error", err)
			fail(rec.MessageId)
			continue
		}
		h.measure(ctx, rec, e)
		if set := e.ConfigurationSet(); e.SentAt().After(newest[set]) {
			newest[set] = e.SentAt()
		}
	}
	if h.Evidence == nil {
		return resp, nil
	}
	for set, at := range newest {
		if !h.ahead(set, at) {
			continue
		}
		if err := h.Evidence.Advance(ctx, set, at); err != nil {
			// The events are recorded; the next batch moves it on.
			h.Log.WarnContext(ctx, "could not advance the newest evidence time", "error", err)
			continue
		}
		h.seen(set, at)
	}
	return resp, nil
}

// ahead reports whether at is after the newest event time this instance
// knows set's evidence to be at (advanced).
func (h *Handler) ahead(set string, at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return at.After(h.advanced[set])
}

// seen records that set's newest event time is at or past at.
func (h *Handler) seen(set string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.advanced == nil {
		h.advanced = map[string]time.Time{}
	}
	if at.After(h.advanced[set]) {
		h.advanced[set] = at
	}
}

// measure records how late a Send event reached the feedback queue after
// SES accepted its message (SQS's SentTimestamp against mail.timestamp),
// and reports one later than the publish bound (R-EVIDENCE-7). A message
// received from a DLQ (DeadLetterQueueSourceArn set) is not measured; one
// moved back from the feedback DLQ by a move task carries its move's
// SentTimestamp, so LateSendEvents is to be expected after such a
// redrive.
func (h *Handler) measure(ctx context.Context, rec events.SQSMessage, e Event) {
	if e.EventType != "Send" || h.Bound <= 0 || rec.Attributes["DeadLetterQueueSourceArn"] != "" {
		return
	}
	ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64)
	if err != nil || ms <= 0 {
		return
	}
	late := time.UnixMilli(ms).Sub(e.SentAt())
	obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"SendEventLatenessSeconds": max(0, late.Seconds())})
	if late > h.Bound {
		obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"LateSendEvents": 1})
		h.Log.ErrorContext(ctx, "a Send event reached the feedback queue later than the evidence bound: a send whose answer was lost may have been resent",
			"provider_message_id", e.Mail.MessageID, "late_seconds", late.Seconds(), "bound_seconds", h.Bound.Seconds())
	}
}

func (h *Handler) record(ctx context.Context, ev Event) error {
	if ev.ProbeID() != "" {
		// An evidence probe: it names no row; its time moves the newest
		// event time.
		h.Log.InfoContext(ctx, "evidence probe event", "event_type", ev.EventType, "probe_id", ev.ProbeID())
		return nil
	}
	id := ev.DeliveryID()
	if id == "" {
		// Mail sent through the same configuration set by something else.
		h.Log.InfoContext(ctx, "SES event without a delivery id; ignored", "event_type", ev.EventType)
		return nil
	}
	e := store.Event{Type: ev.EventType, MessageID: ev.Mail.MessageID, At: ev.At()}
	if ev.Bounce != nil {
		e.BounceType = ev.Bounce.BounceType
	}
	if e.Type == "Reject" {
		return h.reject(ctx, id, ev)
	}
	if e.NotDelivered() && h.Jobs != nil && h.Queue != nil {
		resent, err := h.resend(ctx, id, e)
		if errors.Is(err, store.ErrNotFound) {
			return h.unknown(ctx, id, ev)
		}
		if err != nil || resent {
			return err
		}
	}
	row, outcome, err := h.Deliveries.RecordEvent(ctx, id, e)
	if errors.Is(err, store.ErrNotFound) {
		return h.unknown(ctx, id, ev)
	}
	if err != nil {
		return err
	}
	switch outcome {
	case store.EventDuplicate:
		obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"DuplicateSends": 1})
		h.Log.ErrorContext(ctx, "the row was sent twice: a provider event names a message other than the row's",
			"delivery_id", id, "job_id", row.JobID, "event_type", ev.EventType, "provider_message_id", ev.Mail.MessageID,
			"row_message_id", row.NotificationID)
		return nil
	case store.EventStale, store.EventIgnored:
		h.Log.InfoContext(ctx, "provider event is not evidence for the row; ignored", "delivery_id", id, "event_type", ev.EventType)
		return nil
	}
	if e.Suppresses() && h.Recipients != nil {
		// Recorded after the row, and retried with the whole record if it
		// fails: both writes are idempotent.
		reason := "complaint"
		if ev.EventType == "Bounce" {
			reason = "bounce"
		}
		if err := h.Recipients.Suppress(ctx, unsubscribe.RecipientID(row.Recipient), reason, ev.At()); err != nil {
			return err
		}
		obs.Metric(ctx, h.Log, map[string]string{"Reason": reason}, map[string]float64{"Suppressions": 1})
		h.Log.WarnContext(ctx, "address suppressed; it will not be mailed again", "delivery_id", id, "reason", reason,
			"bounce_sub_type", bounceSubType(ev))
	}
	if row.Undone() {
		// After the suppression: a revived row of a suppressed address is
		// then settled suppressed by its notify, never sent.
		if err := h.revive(ctx, row); err != nil {
			return err
		}
	}
	obs.Metric(ctx, h.Log, map[string]string{"EventType": ev.EventType}, map[string]float64{"ProviderEvents": 1})
	h.Log.InfoContext(ctx, "provider event recorded", "delivery_id", id, "event_type", ev.EventType, "status", row.Status)
	return nil
}

// unknown drops an event for a delivery id with no row: mail sent by
// another deployment through the same configuration set, or a row that
// expired. Retrying cannot create the row, so it is logged and counted,
// not sent to the feedback DLQ.
func (h *Handler) unknown(ctx context.Context, id string, ev Event) error {
	obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"UnknownDeliveryEvents": 1})
	h.Log.WarnContext(ctx, "SES event for an unknown delivery id; dropped", "delivery_id", id, "event_type", ev.EventType)
	return nil
}

// reject settles a row SES rejected (R-EVIDENCE-8): a Reject means SES
// accepted the call, then refused the message for its content and never
// attempted delivery. The same message would be refused again, so the row
// is failed permanently (REJECTED), never resent, and its job needs a
// person. A Reject of a message other than the row's send is evidence of
// nothing and is ignored.
func (h *Handler) reject(ctx context.Context, id string, ev Event) error {
	row, err := h.Deliveries.Reject(ctx, id, ev.Mail.MessageID, ev.At())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return h.unknown(ctx, id, ev)
	case errors.Is(err, store.ErrConflict):
		h.Log.InfoContext(ctx, "a Reject of another send of the row; ignored", "delivery_id", id)
		return nil
	case err != nil:
		return err
	}
	if h.Jobs != nil && !row.IsDigest() { // a digest has no job: its row, failed, is what is held
		if err := h.Jobs.Intervene(ctx, row.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	if err := h.revive(ctx, row); err != nil {
		return err
	}
	obs.Metric(ctx, h.Log, map[string]string{"Reason": "reject"}, map[string]float64{"Rejects": 1})
	h.Log.ErrorContext(ctx, "SES rejected the message; the delivery failed permanently and needs a person",
		"delivery_id", id, "job_id", row.JobID, "provider_message_id", ev.Mail.MessageID)
	return nil
}

// resend sends a delivery again after provider evidence that its send did
// not reach the reader: a transient bounce (R-EVIDENCE-5
// "isPermanentBounce ? 'suppressed' : 'failed_transient'"). The row goes back to failed_transient (one conditional
// write), the job back to notify, and a notify message is enqueued. A
// redelivered event finds the row already requeued and repeats only the
// idempotent reopen and enqueue. It reports false when the row is not
// resent (over the cap, or the event is of an older send): the event is
// then recorded as plain evidence. A bounce of a row whose send is still
// in flight is retried later: the answer of that send settles it first.
func (h *Handler) resend(ctx context.Context, id string, e store.Event) (bool, error) {
	max := h.MaxBounceResends
	if max == 0 {
		max = 2
	}
	row, err := h.Deliveries.ResendAfterNotDelivered(ctx, id, e.MessageID, "TRANSIENT_BOUNCE", e.At, max)
	if errors.Is(err, store.ErrConflict) {
		if row, err = h.Deliveries.Get(ctx, id); err != nil {
			return false, err
		}
		switch {
		case row.Status == delivery.StatusFailedTransient && row.Bounced(e.MessageID):
			// Requeued by an earlier delivery of this event: finish its work.
		case row.Status == delivery.StatusSending && row.NotificationID == "" && h.now().Before(row.LeaseUntil):
			return false, retry.Transient(retry.InFlight, errors.New("a send of the row is in flight; the bounce is settled after it"))
		default:
			h.Log.InfoContext(ctx, "undelivered send not resent", "delivery_id", id, "status", row.Status, "bounce_resends", row.BounceResends)
			return false, nil
		}
	} else if err != nil {
		return false, err
	}
	// A digest has no job: its own message carries it. A reply's
	// confirmation is resent by its own task; its job's outcome stands.
	if !row.IsDigest() && row.Kind != delivery.KindReply {
		if err := h.Jobs.Reopen(ctx, row.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
			return false, err
		}
	}
	if err := h.Queue.Enqueue(ctx, row.NotifyMessage()); err != nil {
		return false, err
	}
	obs.Metric(ctx, h.Log, map[string]string{"Reason": "transient_bounce"}, map[string]float64{"Resends": 1})
	h.Log.WarnContext(ctx, "provider evidence says the send was not delivered; delivery will be sent again",
		"delivery_id", id, "job_id", row.JobID, "reason", "transient_bounce", "bounce_resends", row.BounceResends)
	return true, nil
}

// maxRevived bounds the rows one undone send revives: the versions of
// one changelist standing, directly or in turn, on one reader's row.
const maxRevived = 100

// revive settles again the quiet rows that stood on undone, a row whose
// send a Reject or a bounce undid (R-QUIET-4): superseded by it, or
// skipped as the same diff or nothing new since it. Each goes back to
// pending (store Revive: only while it still stands on that row), its
// job is reopened at notify and a notify message enqueued, as a resend
// after a transient bounce is; the notifier then decides it afresh — the
// newest version that can reach the reader is mailed, through the claim,
// the send and the mark, once, or the row is settled again (a suppressed
// address, a newer version that did reach them). A revived row's own
// dependents stood on it, and are revived in turn. The rejected
// version's own content is never sent again (R-EVIDENCE-8).
//
// A redelivered event finds its rows revived already: a row still
// unsent and revived from that row (RevivedFrom) was revived by an
// earlier delivery, and its reopen, enqueue and dependents are done
// again, all idempotent. A row settled
// again or sent since keeps its course, and what stands on it stands on
// a row that carries it.
func (h *Handler) revive(ctx context.Context, undone delivery.Row) error {
	if h.Jobs == nil || h.Queue == nil {
		return nil
	}
	type standing struct{ id, on string }
	var todo []standing
	for _, d := range undone.Dependents {
		todo = append(todo, standing{d, undone.ID})
	}
	seen := map[string]bool{}
	for len(todo) > 0 && len(seen) < maxRevived {
		st := todo[0]
		todo = todo[1:]
		if seen[st.id] {
			continue
		}
		seen[st.id] = true
		row, err := h.Deliveries.Revive(ctx, st.id, st.on)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			if row, err = h.Deliveries.Get(ctx, st.id); errors.Is(err, store.ErrNotFound) {
				continue // expired
			}
			if err != nil {
				return err
			}
			if !row.Unsent() || row.RevivedFrom != st.on {
				continue // settled again, or sent, since: its own course
			}
		} else if err != nil {
			return err
		}
		if err := h.Jobs.Reopen(ctx, row.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		if err := h.Queue.Enqueue(ctx, row.NotifyMessage()); err != nil {
			return err
		}
		obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"QuietRowsRevived": 1})
		h.Log.WarnContext(ctx, "a quiet row stood on a send SES undid; it is decided again", "delivery_id", row.ID,
			"job_id", row.JobID, "undone", st.on)
		for _, d := range row.Dependents {
			todo = append(todo, standing{d, row.ID})
		}
	}
	if len(todo) > 0 {
		// Each revived row's notify settles it again; rows further down
		// the chain stay standing on one not sent yet, and are left for
		// a person to see.
		h.Log.ErrorContext(ctx, "more quiet rows stood on an undone send than one event revives", "delivery_id", undone.ID,
			"revived", len(seen), "left", len(todo))
	}
	return nil
}

func bounceSubType(ev Event) string {
	if ev.Bounce == nil {
		return ""
	}
	return ev.Bounce.BounceSubType
}
