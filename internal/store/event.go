package store

import "time"

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
