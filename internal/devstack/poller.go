package devstack

import (
	"context"
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

// Poller plays Lambda's SQS event source mapping for one queue: it receives
// batches, hands them to the handler as an events.SQSEvent, and deletes the
// records the handler did not report in BatchItemFailures
// (ReportBatchItemFailures). A handler error fails the whole batch, as in
// Lambda.
type Poller struct {
	SQS       *sqs.Client
	QueueURL  string
	QueueARN  string
	Handler   SQSHandler
	BatchSize int32
	// Timeout bounds one invocation, like a function timeout.
	Timeout time.Duration
	Log     *slog.Logger
}

// Run polls until ctx is done.
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
		if len(out.Messages) == 0 {
			continue
		}
		p.invoke(ctx, out.Messages)
	}
}

func (p *Poller) invoke(ctx context.Context, msgs []sqstypes.Message) {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		ev.Records = append(ev.Records, ToSQSEventRecord(m, p.QueueARN))
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.Timeout)
	resp, err, crashed := p.call(ictx, ev)
	cancel()
	if crashed {
		p.Log.WarnContext(ctx, "invocation crashed; the batch returns after its visibility timeout", "queue", p.QueueARN)
		return
	}
	if err != nil {
		p.Log.ErrorContext(ctx, "invocation failed; the whole batch will be retried", "queue", p.QueueARN, "error", err)
		return
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
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

// call runs the handler on its own goroutine, so a handler that dies
// (runtime.Goexit, the crash fault) is seen as a crashed invocation rather
// than taking the poller with it.
func (p *Poller) call(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error, crashed bool) {
	done := make(chan struct{})
	finished := false
	go func() {
		defer close(done)
		resp, err = p.Handler(ctx, ev)
		finished = true
	}()
	<-done
	return resp, err, !finished
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
