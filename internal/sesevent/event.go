// Package sesevent reads the events SES publishes about each send
// (configuration set → SNS → the feedback queue) and applies them to the
// delivery rows they name: the evidence path (R-OUTBOX-6). The feedback
// function runs its Handler; internal/wire/feedback builds it.
package sesevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/mail"
)

// Event is an SES event-publishing record (configuration set → SNS),
// the fields Criticizer reads. See "Contents of event data that Amazon SES
// publishes to Amazon SNS" in the SES developer guide.
type Event struct {
	EventType string `json:"eventType"` // Send, Delivery, Bounce, Complaint, Reject, ...
	Mail      struct {
		MessageID string              `json:"messageId"`
		Timestamp time.Time           `json:"timestamp"`
		Tags      map[string][]string `json:"tags"`
	} `json:"mail"`
	Bounce *struct {
		BounceType    string    `json:"bounceType"` // Permanent, Transient, Undetermined
		BounceSubType string    `json:"bounceSubType"`
		Timestamp     time.Time `json:"timestamp"`
	} `json:"bounce,omitempty"`
	Complaint *struct {
		Timestamp time.Time `json:"timestamp"`
	} `json:"complaint,omitempty"`
	Delivery *struct {
		Timestamp time.Time `json:"timestamp"`
	} `json:"delivery,omitempty"`
	Reject *struct {
		Reason string `json:"reason"`
	} `json:"reject,omitempty"`
}

// ErrNotEvent marks a message that is not an SES event.
var ErrNotEvent = errors.New("not an SES event")

// Parse reads an SQS body: the SES event itself (SNS raw message
// delivery) or an SNS notification envelope whose Message is the event.
func Parse(body []byte) (Event, error) {
	var probe struct {
		Type    string `json:"Type"`
		Message string `json:"Message"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrNotEvent, err)
	}
	if probe.Type == "Notification" {
		var n events.SNSEntity
		if err := json.Unmarshal(body, &n); err != nil {
			return Event{}, fmt.Errorf("%w: sns envelope: %w", ErrNotEvent, err)
		}
		body = []byte(n.Message)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrNotEvent, err)
	}
	if ev.EventType == "" || ev.Mail.MessageID == "" {
		return Event{}, fmt.Errorf("%w: eventType or mail.messageId missing", ErrNotEvent)
	}
	return ev, nil
}

// ValidationNotice is the text SES publishes to an SNS topic when event
// publishing to it is set up, before any event.
const ValidationNotice = "Successfully validated SNS topic for Amazon SES event publishing."

// IsValidationNotice reports whether an SQS body is SES's validation
// notice: the text itself (SNS raw message delivery) or an SNS
// notification envelope whose Message is the text. It is no event and no
// error: the feedback function acknowledges it.
func IsValidationNotice(body []byte) bool {
	if strings.TrimSpace(string(body)) == ValidationNotice {
		return true
	}
	var n struct {
		Type    string `json:"Type"`
		Message string `json:"Message"`
	}
	return json.Unmarshal(body, &n) == nil && n.Type == "Notification" && strings.TrimSpace(n.Message) == ValidationNotice
}

// DeliveryID is the delivery id tag the notifier set, or "".
func (e Event) DeliveryID() string {
	if v := e.Mail.Tags[mail.DeliveryIDTag]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// At is when the event happened.
func (e Event) At() time.Time {
	switch {
	case e.Delivery != nil && !e.Delivery.Timestamp.IsZero():
		return e.Delivery.Timestamp
	case e.Bounce != nil && !e.Bounce.Timestamp.IsZero():
		return e.Bounce.Timestamp
	case e.Complaint != nil && !e.Complaint.Timestamp.IsZero():
		return e.Complaint.Timestamp
	}
	return e.Mail.Timestamp
}

// ConfigurationSetTag is the tag SES adds to every event of a message sent
// through a configuration set, naming the set.
const ConfigurationSetTag = "ses:configuration-set"

// ConfigurationSet is the configuration set the message was sent
// through, or "" (the local stack's bridge sends none).
func (e Event) ConfigurationSet() string {
	if v := e.Mail.Tags[ConfigurationSetTag]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ProbeID is the evidence probe's id, or "" for any other message.
func (e Event) ProbeID() string {
	if v := e.Mail.Tags[mail.ProbeTag]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SentAt is when SES accepted the message: the time the evidence
// watermark is kept in, comparable with when a notifier sent it.
func (e Event) SentAt() time.Time { return e.Mail.Timestamp }
