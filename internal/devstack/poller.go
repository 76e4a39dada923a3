package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSHandler is a stage function's Lambda handler.
type SQSHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// DefaultTimeout is Lambda's default function timeout, used when a
// Poller's Timeout is not set.
const DefaultTimeout = 3 * time.Second

// maxVisibility is SQS's longest visibility timeout (12 hours).
const maxVisibility = 12 * time.Hour

// Poller plays Lambda's SQS event source mapping for one queue, with the
// behaviour the delivery protocol depends on (docs/local-stack.md):
//
//   - it receives up to BatchSize messages (each receive counts toward the
//     redrive policy's maxReceiveCount), hands them to the handler as an
//     events.SQSEvent, and deletes the records the handler did not report
//     in BatchItemFailures (ReportBatchItemFailures);
//   - a handler error, a panic or a crash fails the whole batch: nothing is
//     deleted, and the batch comes back when the queue's visibility timeout
//     runs out;
//   - at Timeout the invocation is killed, as Lambda kills it: the poller
//     stops waiting, applies no partial answer and deletes nothing, and
//     every AWS request the invocation makes afterwards fails (Invocation,
//     KillSwitch), so a handler that ignores its deadline changes nothing
//     after it. The batch comes back after the visibility timeout;
//   - Hold, if set, keeps chosen messages out of the batch and in flight
//     for as long as it says, so they return after newer messages, the way
//     a message of a timed-out batch returns on AWS (SQS standard queues
//     keep no order).
//
// Lambda also scales pollers and batches by its own rules; the local stack
// runs a fixed number of pollers per queue (FunctionOptions.Pollers).
type Poller struct {
	SQS       *sqs.Client
	QueueURL  string
	QueueARN  string
	Handler   SQSHandler
	BatchSize int32
	// Timeout is the function timeout: the invocation is killed at it
	// (DefaultTimeout when zero).
	Timeout time.Duration
	Log     *slog.Logger
	// Hold, if set, is asked about every message received, before the
	// batch is handed to the handler. A positive answer keeps the message
	// out of this invocation and in flight for that long (rounded up to a
	// whole second, at most 12 hours): its visibility timeout is changed
	// (ChangeMessageVisibility), it counts in
	// ApproximateNumberOfMessagesNotVisible, and it is received again
	// afterwards with its receive count up. Hold is called from the
	// poller's goroutine; pollers of one queue call it concurrently.
	Hold func(events.SQSMessage) time.Duration
	// OnKill, if set, is told about every invocation killed at its timeout
	// (the batch it was given).
	OnKill func(events.SQSEvent)
}

// Run polls until ctx is done. An invocation under way when ctx ends runs
// to its end or its timeout.
func (p *Poller) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(p.QueueURL), MaxNumberOfMessages: max(1, min(p.BatchSize, 10)), WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				p.Log.WarnContext(ctx, "receive failed", "queue", p.QueueARN, "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		msgs := p.hold(ctx, out.Messages)
		if len(msgs) == 0 {
			continue
		}
		p.invoke(ctx, msgs)
	}
}

// hold takes the messages Hold chooses out of the batch and keeps them in
// flight for as long as it says.
func (p *Poller) hold(ctx context.Context, msgs []sqstypes.Message) []sqstypes.Message {
	if p.Hold == nil || len(msgs) == 0 {
		return msgs
	}
	kept := make([]sqstypes.Message, 0, len(msgs))
	var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range msgs {
		d := p.Hold(ToSQSEventRecord(m, p.QueueARN))
		if d <= 0 {
			kept = append(kept, m)
			continue
		}
		secs := int32((min(d, maxVisibility) + time.Second - 1) / time.Second)
		entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: secs})
	}
	if len(entries) > 0 {
		// Whatever happens here, a held message is not handed over: at worst
		// it returns after the queue's visibility timeout instead.
		out, err := p.SQS.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			p.Log.WarnContext(ctx, "could not hold messages; they return after the visibility timeout", "queue", p.QueueARN, "error", err)
		} else if len(out.Failed) > 0 {
			p.Log.WarnContext(ctx, "could not hold some messages; they return after the visibility timeout", "queue", p.QueueARN,
				"failed", len(out.Failed))
		}
	}
	return kept
}

func (p *Poller) invoke(ctx context.Context, msgs []sqstypes.Message) {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		ev.Records = append(ev.Records, ToSQSEventRecord(m, p.QueueARN))
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	inv := &Invocation{}
	ictx, cancel := context.WithTimeout(WithInvocation(context.WithoutCancel(ctx), inv), timeout)
	defer cancel()
	done := p.call(ictx, ev)
	var o outcome
	select {
	case o = <-done:
	case <-ictx.Done():
		select {
		case o = <-done: // answered as the deadline passed
		default:
			inv.Kill()
			p.Log.WarnContext(ctx, "invocation killed at its timeout; the whole batch returns after the visibility timeout",
				"queue", p.QueueARN, "timeout", timeout.String(), "records", len(ev.Records))
			if p.OnKill != nil {
				p.OnKill(ev)
			}
			return
		}
	}
	if o.crashed {
		p.Log.WarnContext(ctx, "invocation crashed; the batch returns after its visibility timeout", "queue", p.QueueARN)
		return
	}
	if o.err != nil {
		p.Log.ErrorContext(ctx, "invocation failed; the whole batch will be retried", "queue", p.QueueARN, "error", o.err)
		return
	}
	failed := make(map[string]bool, len(o.resp.BatchItemFailures))
	for _, f := range o.resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if len(entries) == 0 {
		return
	}
	if _, err := p.SQS.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries}); err != nil {
		p.Log.WarnContext(ctx, "delete batch failed; messages will be redelivered", "queue", p.QueueARN, "error", err)
	}
}

// outcome is how an invocation ended.
type outcome struct {
	resp    events.SQSEventResponse
	err     error
	crashed bool // the handler's goroutine died (runtime.Goexit: the crash fault)
}

// call runs the handler on its own goroutine and reports how it ended. A
// handler that dies (runtime.Goexit, the crash fault) is a crashed
// invocation rather than the poller's end; a panic is a function error,
// as the Lambda runtime reports it.
func (p *Poller) call(ctx context.Context, ev events.SQSEvent) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		finished := false
		defer func() {
			if r := recover(); r != nil {
				o.err, finished = fmt.Errorf("handler panicked: %v", r), true
			}
			o.crashed = !finished
			done <- o
		}()
		o.resp, o.err = p.Handler(ctx, ev)
		finished = true
	}()
	return done
}

// ToSQSEventRecord converts a received message to the record Lambda passes.
func ToSQSEventRecord(m sqstypes.Message, queueARN string) events.SQSMessage {
	attrs := make(map[string]string, len(m.Attributes))
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		mattrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
	}
	return events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: attrs, MessageAttributes: mattrs,
		EventSource: "aws:sqs", EventSourceARN: queueARN, AWSRegion: "us-east-1",
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
