package feedback

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

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
	Log        *slog.Logger
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
