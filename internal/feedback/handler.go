package feedback

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Handler is the feedback function: it records SES events on the delivery
// rows they name, as provider evidence for reconciliation (R-OUTBOX-6),
// and keeps the evidence watermark the notifier settles lost answers by.
type Handler struct {
	Deliveries Outbox
	// Evidence keeps the watermark: how far, per configuration set, the
	// events have been recorded. Nil: not kept (the notifier then never
	// resends a send whose answer was lost).
	Evidence Evidence
	// Recipients receives suppressions: a permanent bounce or a complaint
	// stops every later send to the address. Nil: not recorded.
	Recipients Suppressor
	// Jobs and Queue send a row again after provider evidence that it was
	// not delivered (a transient bounce, a Reject): the job is reopened at
	// notify and a notify message enqueued. Nil: such events are only
	// recorded.
	Jobs  Reopener
	Queue Enqueuer
	// MaxBounceResends bounds the resends of one delivery after evidence
	// that it was not delivered (default 2): a mailbox that stays full is
	// not mailed forever.
	MaxBounceResends int
	Log              *slog.Logger
}

// Outbox is what feedback does with delivery rows (store.Outbox).
type Outbox interface {
	Get(ctx context.Context, id string) (delivery.Row, error)
	RecordEvent(ctx context.Context, id string, e store.Event) (delivery.Row, store.EventOutcome, error)
	ResendAfterNotDelivered(ctx context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error)
}

// Evidence keeps the watermark (store.EvidencePath).
type Evidence interface {
	Advance(ctx context.Context, set string, at time.Time) error
	HoldBack(ctx context.Context, set string, pending map[string]time.Time) error
	Release(ctx context.Context, set string, ids []string) error
}

// Suppressor records suppressions (store.Recipients).
type Suppressor interface {
	Suppress(ctx context.Context, recipientID, reason string, at time.Time) error
}

// Reopener puts a finished job back at notify (store.JobStore).
type Reopener interface {
	Reopen(ctx context.Context, id job.ID) error
}

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Handle processes a batch from the feedback queue. A record that cannot be
// stored is reported as a batch item failure and retried; one that is not an
// SES event is reported too, so the queue's redrive policy moves it to the
// feedback DLQ for inspection instead of dropping it.
//
// The batch also keeps the evidence watermark (store.Evidence), which the
// notifier trusts to say "every event up to here is recorded". So before
// any record is processed, every event of the batch is registered as
// pending, holding the watermark back before it; each is released once
// recorded, and only then does the watermark move to the newest event
// recorded. An event that fails — or a batch whose invocation dies
// half-way — keeps holding the watermark back until a retry records it:
// that event may be the only evidence that a send happened. If the events
// cannot be registered, nothing is processed and the batch is retried.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	fail := func(id string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	parsed := make([]SESEvent, len(ev.Records))
	pending := map[string]map[string]time.Time{} // set → SQS message id → event time
	for i, rec := range ev.Records {
		e, err := ParseSESEvent([]byte(rec.Body))
		if err != nil {
			h.Log.WarnContext(ctx, "feedback record is not an SES event", "message_id", rec.MessageId, "error", err)
			continue
		}
		parsed[i] = e
		set := e.ConfigurationSet()
		if pending[set] == nil {
			pending[set] = map[string]time.Time{}
		}
		pending[set][rec.MessageId] = e.SentAt()
	}
	if !h.holdBack(ctx, pending) {
		for _, rec := range ev.Records {
			fail(rec.MessageId)
		}
		return resp, nil
	}
	recorded := map[string][]string{} // set → SQS message ids recorded
	newest := map[string]time.Time{}  // set → newest event recorded
	for i, rec := range ev.Records {
		e := parsed[i]
		if e.EventType == "" {
			fail(rec.MessageId) // not an SES event: to the feedback DLQ
			continue
		}
		if err := h.record(ctx, e); err != nil {
			h.Log.WarnContext(ctx, "feedback event not recorded", "message_id", rec.MessageId, "error", err)
			fail(rec.MessageId)
			continue
		}
		set := e.ConfigurationSet()
		recorded[set] = append(recorded[set], rec.MessageId)
		if t := e.SentAt(); t.After(newest[set]) {
			newest[set] = t
		}
	}
	if h.Evidence == nil {
		return resp, nil
	}
	for set, ids := range recorded {
		if err := h.Evidence.Release(ctx, set, ids); err != nil {
			// Still registered as pending: they would hold the watermark
			// back for ever. Recording is idempotent, so they go round
			// again and are released then.
			h.Log.WarnContext(ctx, "could not release recorded events from the evidence watermark; retrying them", "error", err)
			for _, id := range ids {
				fail(id)
			}
			continue
		}
		if err := h.Evidence.Advance(ctx, set, newest[set]); err != nil {
			h.Log.WarnContext(ctx, "could not advance the evidence watermark", "error", err)
		}
	}
	return resp, nil
}

// holdBack registers a batch's events as pending; false if it could not.
func (h *Handler) holdBack(ctx context.Context, pending map[string]map[string]time.Time) bool {
	if h.Evidence == nil {
		return true
	}
	for set, p := range pending {
		if err := h.Evidence.HoldBack(ctx, set, p); err != nil {
			h.Log.WarnContext(ctx, "could not register the batch's events with the evidence watermark; retrying the batch", "error", err)
			return false
		}
	}
	return true
}

func (h *Handler) record(ctx context.Context, ev SESEvent) error {
	if ev.ProbeID() != "" {
		// An evidence probe: it names no row; its time moves the watermark.
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
	obs.Metric(ctx, h.Log, map[string]string{"EventType": ev.EventType}, map[string]float64{"ProviderEvents": 1})
	h.Log.InfoContext(ctx, "provider event recorded", "delivery_id", id, "event_type", ev.EventType, "status", row.Status)
	return nil
}

// unknown drops an event for a delivery id with no row: mail sent by
// another deployment through the same configuration set, or a row that
// expired. Retrying cannot create the row, so it is logged and counted,
// not sent to the feedback DLQ.
func (h *Handler) unknown(ctx context.Context, id string, ev SESEvent) error {
	obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"UnknownDeliveryEvents": 1})
	h.Log.WarnContext(ctx, "SES event for an unknown delivery id; dropped", "delivery_id", id, "event_type", ev.EventType)
	return nil
}

// resend sends a delivery again after provider evidence that its send did
// not reach the reader: a transient bounce (R-EVIDENCE-5
// "isPermanentBounce ? 'suppressed' : 'failed_transient'") or a Reject
// (R-RECON-2: "if not delivered, clear sent markers and
// requeue"). The row goes back to failed_transient (one conditional
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
	class := "TRANSIENT_BOUNCE"
	if e.Type == "Reject" {
		class = "REJECTED"
	}
	row, err := h.Deliveries.ResendAfterNotDelivered(ctx, id, e.MessageID, class, e.At, max)
	if errors.Is(err, store.ErrConflict) {
		if row, err = h.Deliveries.Get(ctx, id); err != nil {
			return false, err
		}
		switch {
		case row.Status == delivery.StatusFailedTransient && row.Bounced(e.MessageID):
			// Requeued by an earlier delivery of this event: finish its work.
		case row.Status == delivery.StatusSending && row.NotificationID == "" && time.Now().Before(row.LeaseUntil):
			return false, retry.Transient(retry.InFlight, errors.New("a send of the row is in flight; the bounce is settled after it"))
		default:
			h.Log.InfoContext(ctx, "undelivered send not resent", "delivery_id", id, "status", row.Status, "bounce_resends", row.BounceResends)
			return false, nil
		}
	} else if err != nil {
		return false, err
	}
	if err := h.Jobs.Reopen(ctx, row.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
		return false, err
	}
	if err := h.Queue.Enqueue(ctx, job.Message{JobID: row.JobID, Stage: job.StageNotify}); err != nil {
		return false, err
	}
	reason := "transient_bounce"
	if e.Type == "Reject" {
		reason = "reject"
	}
	obs.Metric(ctx, h.Log, map[string]string{"Reason": reason}, map[string]float64{"Resends": 1})
	h.Log.WarnContext(ctx, "provider evidence says the send was not delivered; delivery will be sent again",
		"delivery_id", id, "job_id", row.JobID, "reason", reason, "bounce_resends", row.BounceResends)
	return true, nil
}

func bounceSubType(ev SESEvent) string {
	if ev.Bounce == nil {
		return ""
	}
	return ev.Bounce.BounceSubType
}
