package feedback

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// resend sends a delivery again after a transient bounce of its latest
// send: seed 004 Phase 7 "isPermanentBounce ? 'suppressed' :
// 'failed_transient'". The row goes back to failed_transient (one
// conditional write), the job back to notify, and a notify message is
// enqueued. A redelivered event finds the row already requeued and repeats
// only the idempotent reopen and enqueue. It reports false when the row is
// not resent (over the cap, or the bounce is of an older send): the event is
// then recorded as plain evidence.
func (h *Handler) resend(ctx context.Context, id string, e store.Event) (bool, error) {
	max := h.MaxBounceResends
	if max == 0 {
		max = 2
	}
	row, err := h.Deliveries.ResendAfterBounce(ctx, id, e.MessageID, e.At, max)
	if errors.Is(err, store.ErrConflict) {
		if row, err = h.Deliveries.Get(ctx, id); err != nil {
			return false, err
		}
		if row.Status != delivery.StatusFailedTransient || row.LastBounceAt.IsZero() || !row.LastBounceAt.Equal(e.At.UTC()) {
			h.Log.InfoContext(ctx, "transient bounce not resent", "delivery_id", id, "status", row.Status, "bounce_resends", row.BounceResends)
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
	obs.Metric(ctx, h.Log, map[string]string{"Reason": "transient_bounce"}, map[string]float64{"Resends": 1})
	h.Log.InfoContext(ctx, "transient bounce; delivery will be sent again", "delivery_id", id, "job_id", row.JobID, "bounce_resends", row.BounceResends)
	return true, nil
}

func bounceSubType(ev SESEvent) string {
	if ev.Bounce == nil {
		return ""
	}
	return ev.Bounce.BounceSubType
}

// Handler is the feedback function: it records SES events on the delivery
// rows they name, as provider evidence for reconciliation (seed 000 §8.2).
type Handler struct {
	Deliveries *store.Deliveries
	// Recipients receives suppressions: a permanent bounce or a complaint
	// stops every later send to the address (issue 6 §3). Nil: not recorded.
	Recipients *store.Recipients
	// Jobs and Queue send a row again after a transient bounce: the job is
	// reopened at notify and a notify message enqueued. Nil: transient
	// bounces are only recorded.
	Jobs  *store.Jobs
	Queue Enqueuer
	// MaxBounceResends bounds the resends of one delivery after transient
	// bounces (default 2): a mailbox that stays full is not mailed forever.
	MaxBounceResends int
	Log              *slog.Logger
}

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Handle processes a batch from the feedback queue. A record that cannot be
// stored is reported as a batch item failure and retried; one that is not an
// SES event is reported too, so the queue's redrive policy moves it to the
// feedback DLQ for inspection instead of dropping it.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if err := h.record(ctx, []byte(rec.Body)); err != nil {
			h.Log.WarnContext(ctx, "feedback event not recorded", "message_id", rec.MessageId, "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

func (h *Handler) record(ctx context.Context, body []byte) error {
	ev, err := ParseSESEvent(body)
	if err != nil {
		return err
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
	if e.Type == "Bounce" && e.BounceType == "Transient" && h.Jobs != nil && h.Queue != nil {
		resent, err := h.resend(ctx, id, e)
		if err != nil || resent {
			return err
		}
	}
	row, err := h.Deliveries.RecordEvent(ctx, id, e)
	if errors.Is(err, store.ErrNotFound) {
		h.Log.WarnContext(ctx, "SES event for an unknown delivery id; ignored", "delivery_id", id, "event_type", ev.EventType)
		return nil
	}
	if err != nil {
		return err
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
