package devstack_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The local poller must behave as Lambda's SQS event source mapping with
// ReportBatchItemFailures: records it reports failed stay in the queue and
// come back with a higher ApproximateReceiveCount; the others are deleted.
// This runs against fauxqs, the real SQS wire protocol.
func TestPoller_ReportBatchItemFailures_KeepsOnlyFailedRecords(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	ctx := context.Background()
	url := res.Queues.Queue[job.StageFetch]
	for _, body := range []string{"ok-1", "fail-1", "ok-2"} {
		if _, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan events.SQSMessage, 16)
	h := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			seen <- r
			if r.Body == "fail-1" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}
	// A short visibility so the failed record returns quickly.
	if _, err := env.Clients.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{"VisibilityTimeout": "1"}}); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &devstack.Poller{SQS: env.Clients.SQS, QueueURL: url, QueueARN: res.QueueARNs[job.StageFetch], Handler: h,
		BatchSize: 10, Timeout: 5 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() { p.Run(pctx); close(done) }()
	counts := map[string]int{}
	var failReceive string
	deadline := time.After(15 * time.Second)
	for counts["fail-1"] < 2 {
		select {
		case r := <-seen:
			counts[r.Body]++
			if r.Body == "fail-1" {
				failReceive = r.Attributes["ApproximateReceiveCount"]
			}
			if r.EventSource != "aws:sqs" || r.EventSourceARN == "" || r.ReceiptHandle == "" {
				t.Errorf("record lacks Lambda's fields: %+v", r)
			}
		case <-deadline:
			t.Fatalf("timed out; seen %v", counts)
		}
	}
	cancel()
	<-done
	if counts["ok-1"] != 1 || counts["ok-2"] != 1 {
		t.Fatalf("succeeded records were redelivered: %v", counts)
	}
	if failReceive != "2" {
		t.Fatalf("the failed record came back with ApproximateReceiveCount %q, want 2", failReceive)
	}
}
