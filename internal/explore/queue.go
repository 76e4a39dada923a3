package explore

import (
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
)

// message is one SQS message of a standard queue as the explorer keeps it.
type message struct {
	id   string
	body string
	// sent is SQS's SentTimestamp; arrived is when the message first
	// entered the system, kept across a move to the DLQ and back.
	sent, arrived time.Time
	visibleAt     time.Time
	receives      int
	firstReceive  time.Time
	receipt       int // the current receipt handle's generation
	deleted       bool
	// event is the SES event the message carries (feedback queue only).
	event *sesEvent
	// stage is the stage message the body carries, decoded once (nil: a
	// body that is not one, such as a dead-letter envelope).
	stage   *job.Message
	decoded bool
}

// stageMessage is the stage message m carries, if it is one.
func (m *message) stageMessage() *job.Message {
	if !m.decoded {
		m.decoded = true
		var jm job.Message
		if decodeMessage(m.body, &jm) == nil && jm.JobID != "" {
			m.stage = &jm
		}
	}
	return m.stage
}

// queue is a standard SQS queue as the delivery protocol relies on it:
// no order (the explorer picks which visible message is received next),
// visibility timeouts, receive counts and a redrive policy to a DLQ,
// delays, and approximate counters that are exact here.
type queue struct {
	name        string
	dlq         *queue
	maxReceives int
	visibility  time.Duration
	msgs        []*message
}

func (q *queue) add(w *world, id, body string, delay time.Duration, arrived time.Time, ev *sesEvent) *message {
	m := &message{id: id, body: body, sent: w.now, arrived: arrived,
		visibleAt: w.now.Add(delay), event: ev}
	if arrived.IsZero() {
		m.arrived = w.now
	}
	q.msgs = append(q.msgs, m)
	return m
}

// visible lists the messages a receive may return now, in send order.
func (q *queue) visible(now time.Time) []*message {
	var out []*message
	for _, m := range q.msgs {
		if !m.deleted && !m.visibleAt.After(now) {
			out = append(out, m)
		}
	}
	return out
}

// byID finds a message that is not deleted.
func (q *queue) byID(id string) *message {
	for _, m := range q.msgs {
		if m.id == id && !m.deleted {
			return m
		}
	}
	return nil
}

// stats are GetQueueAttributes' ApproximateNumberOfMessages,
// ApproximateNumberOfMessagesNotVisible and
// ApproximateNumberOfMessagesDelayed: exact here (SQS's may lag; the
// protocol allows for that separately).
func (q *queue) stats(now time.Time) (visible, inFlight, delayed int) {
	for _, m := range q.msgs {
		switch {
		case m.deleted:
		case !m.visibleAt.After(now):
			visible++
		case m.receives > 0:
			inFlight++
		default:
			delayed++
		}
	}
	return
}

// receive takes m for an invocation: its receive count goes up and it is
// hidden for the visibility timeout. A message past maxReceiveCount is
// moved to the DLQ instead (SQS's redrive policy keeps its id and
// SentTimestamp) and ok is false.
func (q *queue) receive(w *world, m *message) (events.SQSMessage, bool) {
	if q.dlq != nil && q.maxReceives > 0 && m.receives >= q.maxReceives {
		m.deleted = true
		moved := *m
		moved.visibleAt, moved.deleted = w.now, false
		q.dlq.msgs = append(q.dlq.msgs, &moved)
		return events.SQSMessage{}, false
	}
	m.receives++
	m.receipt++
	if m.firstReceive.IsZero() {
		m.firstReceive = w.now
	}
	m.visibleAt = w.now.Add(q.visibility)
	return events.SQSMessage{
		MessageId: m.id, ReceiptHandle: m.id + "/" + strconv.Itoa(m.receipt), Body: m.body,
		Attributes: map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(m.receives),
			"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		},
		EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + q.name,
	}, true
}

// handle resolves a receipt handle to its message, nil when the handle is
// stale (the message was received again since, or deleted): SQS then
// ignores a delete and refuses a visibility change.
func (q *queue) handle(rh string) *message {
	for _, m := range q.msgs {
		if !m.deleted && m.id+"/"+strconv.Itoa(m.receipt) == rh {
			return m
		}
	}
	return nil
}

// redrive moves every message of the DLQ back to its source queue, as
// StartMessageMoveTask does: each gets a new message id and
// SentTimestamp.
func (q *queue) redrive(w *world, to *queue) int {
	n := 0
	for _, m := range q.msgs {
		if m.deleted {
			continue
		}
		m.deleted = true
		to.add(w, m.id+"'", m.body, 0, m.arrived, m.event)
		n++
	}
	return n
}
