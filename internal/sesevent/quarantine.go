package sesevent

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/obs"
)

// QuarantinePrefix is where the feedback function keeps a copy of each
// message that can never be evidence, in the payload bucket. The bucket's
// lifecycle rule for the prefix expires the copies
// (QuarantineExpiryDays).
const QuarantinePrefix = "quarantine/feedback"

// QuarantineExpiryDays is how long a quarantined copy is kept: long enough
// for an operator to look at what was published to the events topic,
// short because it may hold addresses (R-PRIVACY-1).
const QuarantineExpiryDays = 14

// Quarantine keeps a copy of a message (blob.Store: content-addressed, so
// a retried record writes the same object).
type Quarantine interface {
	Put(ctx context.Context, prefix string, b []byte) (ref, sha string, err error)
}

// quarantine acknowledges a record that can never be an SES event nor the
// validation notice (R-EVIDENCE-10): retrying it cannot change it, and
// left to the redrive policy it would sit in the feedback DLQ, where it
// keeps the evidence path from ever draining (internal/drain) and every
// send whose answer was lost held. A copy goes to the payload bucket
// under QuarantinePrefix and the record is counted
// (QuarantinedFeedback); the log names the object, never the body, which
// may hold addresses. A copy that cannot be stored fails the record, to be
// tried again. Without a Quarantine the record fails, as before: it goes to
// the feedback DLQ.
func (h *Handler) quarantine(ctx context.Context, rec events.SQSMessage, cause error) error {
	if h.Quarantine == nil {
		return fmt.Errorf("no quarantine: %w", cause)
	}
	ref, _, err := h.Quarantine.Put(ctx, QuarantinePrefix, []byte(rec.Body))
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	obs.Metric(ctx, h.Log, map[string]string{"Function": "feedback"}, map[string]float64{"QuarantinedFeedback": 1})
	h.Log.WarnContext(ctx, "feedback record is not an SES event; a copy is quarantined and the record acknowledged",
		"message_id", rec.MessageId, "object", ref, "bytes", len(rec.Body))
	return nil
}
