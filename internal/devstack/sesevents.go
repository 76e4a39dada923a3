package devstack

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/criticizer/criticizer/internal/feedback"
	"github.com/criticizer/criticizer/internal/mail"
)

// SESEventBridge is the local feedback source. SES publishes events for
// every message sent through a configuration set (configuration set → SNS →
// SQS → feedback function); the emulator publishes none. The bridge watches
// the emulator's store and publishes, for each new message, the Send and
// Delivery events SES would, to the local SNS topic, so the feedback
// function and reconciliation run the same code as in AWS.
//
// The emulator keeps headers but not message tags, so the bridge reads the
// delivery id from the X-Criticizer-Delivery-Id header and puts it in the
// event's tags, where SES would have put the delivery_id tag.
type SESEventBridge struct {
	Store    *feedback.SESEmulator
	SNS      *sns.Client
	TopicARN string
	Interval time.Duration
	Log      *slog.Logger
	seen     map[string]bool
}

// Run publishes events until ctx is done.
func (b *SESEventBridge) Run(ctx context.Context) {
	b.seen = map[string]bool{}
	interval := b.Interval
	if interval <= 0 {
		interval = 300 * time.Millisecond
	}
	for ctx.Err() == nil {
		if err := b.once(ctx); err != nil && ctx.Err() == nil {
			b.Log.WarnContext(ctx, "ses event bridge", "error", err)
		}
		sleep(ctx, interval)
	}
}

func (b *SESEventBridge) once(ctx context.Context) error {
	emails, err := b.Store.Emails(ctx)
	if err != nil {
		return err
	}
	for _, e := range emails {
		if b.seen[e.MessageID] {
			continue
		}
		id := e.Header(mail.DeliveryIDHeader)
		at := time.Unix(e.At, 0).UTC()
		for _, typ := range []string{"Send", "Delivery"} {
			body, _ := json.Marshal(sesEvent(typ, e.MessageID, id, at))
			if _, err := b.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(b.TopicARN), Message: aws.String(string(body))}); err != nil {
				return err
			}
		}
		b.seen[e.MessageID] = true
	}
	return nil
}

// sesEvent builds an event in SES's event-publishing format.
func sesEvent(typ, messageID, deliveryID string, at time.Time) map[string]any {
	ev := map[string]any{
		"eventType": typ,
		"mail": map[string]any{
			"timestamp": at.Format(time.RFC3339Nano), "messageId": messageID, "source": "criticizer@local",
			"tags": map[string][]string{mail.DeliveryIDTag: {deliveryID}},
		},
	}
	switch typ {
	case "Send":
		ev["send"] = map[string]any{}
	case "Delivery":
		ev["delivery"] = map[string]any{"timestamp": at.Format(time.RFC3339Nano), "smtpResponse": "250 2.0.0 OK (local emulator)"}
	}
	return ev
}
