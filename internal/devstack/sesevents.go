package devstack

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/sesevent"
)

// SESEventBridge is the local feedback source. SES publishes events for
// every message sent through a configuration set (configuration set → SNS →
// SQS → feedback function); the emulator publishes none. The bridge watches
// the emulator's store and publishes, for each new message, the Send and
// Delivery events SES would, to the local SNS topic, so the feedback
// function and reconciliation run the same code as in AWS.
//
// The emulator keeps headers but not message tags, so the bridge reads the
// delivery id from the X-Criticizer-Delivery-Id header (and an evidence
// probe's id from X-Criticizer-Probe) and puts it in the event's tags,
// where SES would have put the tag.
//
// Setting up event publishing to a topic makes SES publish a plain-text
// notice to it first (ValidationNotice); the bridge is the local stack's
// event destination, so it publishes that notice when it starts, before
// any event, as a plain SNS message (raw delivery hands the SQS consumer
// the bare text, as on AWS: Provision subscribes the feedback queue with
// RawMessageDelivery, as infra does).
//
// Tests stall the evidence path with Pause and Resume, and the chaos
// campaign reorders, drops, duplicates and delays events through Deliver.
type SESEventBridge struct {
	Store    *SESEmulator
	SNS      *sns.Client
	TopicARN string
	// ConfigurationSet, if set, is put in each event's
	// ses:configuration-set tag, as SES does.
	ConfigurationSet string
	Interval         time.Duration
	Log              *slog.Logger
	// Deliver, if set, publishes one poll's new events (in the order SES
	// produced them) through publish, as it likes; nil publishes each once,
	// in order.
	Deliver func(ctx context.Context, evs []SESEvent, publish func(context.Context, SESEvent) error) error
	// Accept, if set, says which stored mail is this stack's: only that
	// mail gets events. SES publishes events only for mail sent through
	// the configuration set, but the emulator's store is one mailbox for
	// every stack that shares it (`make test` runs each package against
	// one emulator), and it does not keep the configuration set. nil
	// accepts all mail.
	Accept func(StoredEmail) bool

	mu     sync.Mutex
	paused bool
	seen   map[string]bool
}

// SESEvent is one event the bridge publishes.
type SESEvent struct {
	// Type is Send or Delivery, what the bridge makes of each message;
	// a Deliver hook may publish a Reject or a Bounce instead of the
	// Delivery (SES's verdicts after the Send: the content refused, the
	// mailbox gone), in SES's format.
	Type       string
	BounceType string // a Bounce's: Permanent or Transient
	MessageID  string
	DeliveryID string // "" for a probe or foreign mail
	ProbeID    string
	At         time.Time
}

// Pause stops publishing: events wait, as they would behind a stalled SNS
// subscription or a broken configuration set. Resume publishes them.
func (b *SESEventBridge) Pause() {
	b.mu.Lock()
	b.paused = true
	b.mu.Unlock()
}

// Resume publishes again, the held events first.
func (b *SESEventBridge) Resume() {
	b.mu.Lock()
	b.paused = false
	b.mu.Unlock()
}

// ValidationNotice is the message SES publishes to an SNS topic when event
// publishing to it is set up (a configuration set's event destination
// created or changed): an SNS notification whose Message is this text, not
// JSON, with no subject.
const ValidationNotice = sesevent.ValidationNotice

// Run publishes the validation notice, then events until ctx is done.
// Mail already in the emulator's store when it starts gets no events: SES
// publishes events only for mail sent once the event destination exists
// (and only for its own configuration set, which the emulator does not
// record; stacks sharing one emulator, as the tests do, still see each
// other's later mail).
func (b *SESEventBridge) Run(ctx context.Context) {
	interval := b.Interval
	if interval <= 0 {
		interval = 300 * time.Millisecond
	}
	for ctx.Err() == nil {
		err := b.start(ctx)
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			b.Log.WarnContext(ctx, "ses event bridge: setting up", "error", err)
		}
		sleep(ctx, interval)
	}
	for ctx.Err() == nil {
		if err := b.once(ctx); err != nil && ctx.Err() == nil {
			b.Log.WarnContext(ctx, "ses event bridge", "error", err)
		}
		sleep(ctx, interval)
	}
}

func (b *SESEventBridge) once(ctx context.Context) error {
	b.mu.Lock()
	paused := b.paused
	b.mu.Unlock()
	if paused {
		return nil
	}
	emails, err := b.Store.Emails(ctx)
	if err != nil {
		return err
	}
	var evs []SESEvent
	var ids []string
	for _, e := range emails {
		if b.seen[e.MessageID] {
			continue
		}
		if b.Accept != nil && !b.Accept(e) {
			b.seen[e.MessageID] = true // another stack's: never this one's
			continue
		}
		at := time.Unix(e.At, 0).UTC()
		for _, typ := range []string{"Send", "Delivery"} {
			evs = append(evs, SESEvent{Type: typ, MessageID: e.MessageID, DeliveryID: e.Header(mail.DeliveryIDHeader),
				ProbeID: e.Header(mail.ProbeHeader), At: at})
		}
		ids = append(ids, e.MessageID)
	}
	if len(evs) == 0 {
		return nil
	}
	deliver := b.Deliver
	if deliver == nil {
		deliver = func(ctx context.Context, evs []SESEvent, publish func(context.Context, SESEvent) error) error {
			for _, e := range evs {
				if err := publish(ctx, e); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := deliver(ctx, evs, b.Publish); err != nil {
		return err
	}
	for _, id := range ids {
		b.seen[id] = true
	}
	return nil
}

// start marks the mail already sent as seen, then publishes the
// validation notice.
func (b *SESEventBridge) start(ctx context.Context) error {
	emails, err := b.Store.Emails(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(emails))
	for _, e := range emails {
		seen[e.MessageID] = true
	}
	b.mu.Lock()
	b.seen = seen
	b.mu.Unlock()
	return b.PublishValidationNotice(ctx)
}

// PublishValidationNotice publishes SES's validation notice to the topic,
// as SES does when event publishing to it is set up.
func (b *SESEventBridge) PublishValidationNotice(ctx context.Context) error {
	_, err := b.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(b.TopicARN), Message: aws.String(ValidationNotice)})
	return err
}

// Publish publishes one event to the topic, in SES's event-publishing
// format.
func (b *SESEventBridge) Publish(ctx context.Context, e SESEvent) error {
	tags := map[string][]string{}
	if e.DeliveryID != "" {
		tags[mail.DeliveryIDTag] = []string{e.DeliveryID}
	}
	if e.ProbeID != "" {
		tags[mail.ProbeTag] = []string{e.ProbeID}
	}
	if b.ConfigurationSet != "" {
		tags[sesevent.ConfigurationSetTag] = []string{b.ConfigurationSet}
	}
	ev := map[string]any{
		"eventType": e.Type,
		"mail": map[string]any{
			"timestamp": e.At.Format(time.RFC3339Nano), "messageId": e.MessageID, "source": "criticizer@local",
			"tags": tags,
		},
	}
	switch e.Type {
	case "Send":
		ev["send"] = map[string]any{}
	case "Delivery":
		ev["delivery"] = map[string]any{"timestamp": e.At.Format(time.RFC3339Nano), "smtpResponse": "250 2.0.0 OK (local emulator)"}
	case "Reject":
		ev["reject"] = map[string]any{"reason": "Bad content"}
	case "Bounce":
		ev["bounce"] = map[string]any{"bounceType": e.BounceType, "bounceSubType": "General", "timestamp": e.At.Format(time.RFC3339Nano),
			"bouncedRecipients": []map[string]string{{"action": "failed", "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown (local emulator)"}}}
	}
	body, _ := json.Marshal(ev)
	_, err := b.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(b.TopicARN), Message: aws.String(string(body))})
	return err
}
