package devstack_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
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

// killTestQueue is a stage queue of a fresh stack with a short visibility
// timeout and, if maxReceives > 0, a redrive policy to its DLQ after that
// many receives; it returns the queue's URL and ARN and the DLQ's URL.
func killTestQueue(t *testing.T, env testenv.Env, visibility, maxReceives int) (url, arn, dlq string) {
	t.Helper()
	ctx := context.Background()
	res := testenv.Provision(t, env)
	url, arn, dlq = res.Queues.Queue[job.StageFetch], res.QueueARNs[job.StageFetch], res.Queues.DLQ[job.StageFetch]
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(visibility)}
	if maxReceives > 0 {
		a, err := env.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, a.Attributes["QueueArn"], maxReceives)
	}
	if _, err := env.Clients.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	return url, arn, dlq
}

// drain receives every visible message of a queue and deletes it.
func drain(t *testing.T, c *sqs.Client, url string) []sqstypes.Message {
	t.Helper()
	var all []sqstypes.Message
	for {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		for _, m := range out.Messages {
			all = append(all, m)
			if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// killable is an SQS client whose requests fail once their invocation is
// killed, as every function's client is under StartFunctions.
func killable(env testenv.Env) *sqs.Client {
	cfg := env.Clients.Config.Copy()
	devstack.KillSwitch()(&cfg)
	return queue.NewSQS(cfg, env.Endpoints.SQS)
}

// Lambda kills an invocation at its timeout: a handler that ignores its
// deadline (it sleeps on, then reports a batch item failure and writes
// with context.WithoutCancel, as notify's mark does) changes nothing after
// the deadline; its partial answer is not applied and nothing is deleted;
// the whole batch comes back after the visibility timeout with every
// receive counted. The old poller waited for the handler and applied its
// answer: two of the three records were deleted after the first, killed,
// invocation, and the late write landed.
func TestPoller_KilledAtTimeout_NothingAfterItAndTheWholeBatchReturns(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	url, arn, _ := killTestQueue(t, env, 1, 0)
	side := testenv.Provision(t, env).Queues.Queue[job.StageNotify] // where the handler writes
	for _, body := range []string{"a", "b", "c"} {
		if _, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	fn := killable(env)
	var mu sync.Mutex
	seen := map[string][]string{} // body → ApproximateReceiveCount of each receive
	lateWrite := make(chan error, 1)
	h := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		first := false
		mu.Lock()
		for _, r := range ev.Records {
			seen[r.Body] = append(seen[r.Body], r.Attributes["ApproximateReceiveCount"])
			first = first || r.Attributes["ApproximateReceiveCount"] == "1"
		}
		mu.Unlock()
		if !first {
			return events.SQSEventResponse{}, nil // the retry is quick and succeeds
		}
		if _, err := fn.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(side), MessageBody: aws.String("before-deadline")}); err != nil {
			t.Errorf("a write before the deadline failed: %v", err)
		}
		dl, _ := ctx.Deadline()
		time.Sleep(time.Until(dl) + 300*time.Millisecond) // ignores its deadline
		_, err := fn.SendMessage(context.WithoutCancel(ctx), &sqs.SendMessageInput{QueueUrl: aws.String(side), MessageBody: aws.String("after-deadline")})
		lateWrite <- err
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}}, nil
	}
	var kills []events.SQSEvent
	p := &devstack.Poller{SQS: env.Clients.SQS, QueueURL: url, QueueARN: arn, Handler: h, BatchSize: 10, Timeout: 500 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnKill: func(ev events.SQSEvent) { mu.Lock(); kills = append(kills, ev); mu.Unlock() }}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(pctx); close(done) }()
	defer func() { cancel(); <-done }()

	select {
	case err := <-lateWrite:
		if !errors.Is(err, devstack.ErrInvocationKilled) {
			t.Fatalf("the write after the deadline answered %v, want ErrInvocationKilled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never reached its late write")
	}
	waitFor(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen["a"]) >= 2 && len(seen["b"]) >= 2 && len(seen["c"]) >= 2
	})
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, env.Clients.SQS, url) == 0 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(kills) != 1 || len(kills[0].Records) != 3 {
		t.Fatalf("killed invocations %d (records %v), want one of the whole batch of 3", len(kills), kills)
	}
	for _, b := range []string{"a", "b", "c"} {
		if got := seen[b]; !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("%s was received with counts %v, want [1 2]: the whole batch returns, each receive counted", b, got)
		}
	}
	var bodies []string
	for _, m := range drain(t, env.Clients.SQS, side) {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if !slices.Equal(bodies, []string{"before-deadline"}) {
		t.Fatalf("the handler's writes that took effect: %v, want only the one before the deadline", bodies)
	}
}

// Every receive counts toward maxReceiveCount: a batch whose invocations
// are killed every time reaches the DLQ after maxReceiveCount receives, as
// the same message (same id, body and enqueue time) and with no envelope,
// which is what the redrive policy does on AWS. This checks fauxqs's RedrivePolicy and
// ApproximateReceiveCount through the poller.
func TestPoller_KilledEveryTime_RedrivePolicyMovesItToTheDLQ(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	url, arn, dlq := killTestQueue(t, env, 1, 2)
	sent, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("slow")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var counts []string
	var sentAt string
	h := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		for _, r := range ev.Records {
			counts = append(counts, r.Attributes["ApproximateReceiveCount"])
			sentAt = r.Attributes["SentTimestamp"]
		}
		mu.Unlock()
		<-ctx.Done() // a model call that outlives the function
		time.Sleep(100 * time.Millisecond)
		return events.SQSEventResponse{}, nil
	}
	p := &devstack.Poller{SQS: env.Clients.SQS, QueueURL: url, QueueARN: arn, Handler: h, BatchSize: 10, Timeout: 300 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(pctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 20*time.Second, func() bool { return queueCount(t, env.Clients.SQS, dlq) == 1 })
	cancel()
	<-done
	got := drain(t, env.Clients.SQS, dlq)
	if len(got) != 1 || aws.ToString(got[0].MessageId) != aws.ToString(sent.MessageId) || aws.ToString(got[0].Body) != "slow" {
		t.Fatalf("DLQ holds %+v, want the message itself (same id and body)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	// AWS: "When a message is moved to a dead-letter queue, the enqueue
	// timestamp is unchanged" (standard queues).
	if at := got[0].Attributes["SentTimestamp"]; at != sentAt {
		t.Fatalf("SentTimestamp %s in the DLQ, want the original %s", at, sentAt)
	}
	if !slices.Equal(counts, []string{"1", "2"}) {
		t.Fatalf("the handler saw receive counts %v, want [1 2] (maxReceiveCount 2)", counts)
	}
	if n := queueCount(t, env.Clients.SQS, url); n != 0 {
		t.Fatalf("%d messages left in the source queue", n)
	}
}

// SQS standard queues keep no order: a held message stays in flight
// (counted as not visible), is not handed to the handler, and comes back
// after newer messages with its receive count up — as a message of a
// timed-out batch does on AWS.
func TestPoller_Hold_MessageReturnsAfterNewerOnes(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	url, arn, _ := killTestQueue(t, env, 30, 0)
	send := func(body string) {
		if _, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	send("old")
	hold := &devstack.HoldOnce{Match: func(m events.SQSMessage) bool { return m.Body == "old" }, For: 2 * time.Second}
	got := make(chan events.SQSMessage, 16)
	h := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, r := range ev.Records {
			got <- r
		}
		return events.SQSEventResponse{}, nil
	}
	p := &devstack.Poller{SQS: env.Clients.SQS, QueueURL: url, QueueARN: arn, Handler: h, BatchSize: 10, Timeout: 5 * time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Hold: hold.Hold}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(pctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, func() bool { return len(hold.Held()) == 1 })
	if c := counters(t, env.Clients.SQS, url); c[0] != 0 || c[1] != 1 {
		t.Fatalf("while held: visible %d, in flight %d; want 0 and 1", c[0], c[1])
	}
	for _, b := range []string{"new-1", "new-2", "new-3"} {
		send(b)
	}
	var order []string
	var oldCount string
	timeout := time.After(20 * time.Second)
	for len(order) < 4 {
		select {
		case r := <-got:
			order = append(order, r.Body)
			if r.Body == "old" {
				oldCount = r.Attributes["ApproximateReceiveCount"]
			}
		case <-timeout:
			t.Fatalf("handed over so far: %v", order)
		}
	}
	if order[3] != "old" {
		t.Fatalf("order %v: want the held message after the newer ones", order)
	}
	if oldCount != "2" {
		t.Fatalf("the held message came back with ApproximateReceiveCount %q, want 2", oldCount)
	}
}

// counters reads a queue's visible, in-flight and delayed counts.
func counters(t *testing.T, c *sqs.Client, url string) [3]int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		t.Fatal(err)
	}
	var r [3]int
	for i, n := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		r[i], _ = strconv.Atoi(out.Attributes[n])
	}
	return r
}

// queueCount is every message a queue holds: visible, in flight, delayed.
func queueCount(t *testing.T, c *sqs.Client, url string) int {
	n := counters(t, c, url)
	return n[0] + n[1] + n[2]
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
