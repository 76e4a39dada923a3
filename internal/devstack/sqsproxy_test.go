package devstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/testenv"
)

// queuePair creates a queue and its DLQ, moved there after maxReceives
// receives, and returns their URLs and the DLQ's ARN.
func queuePair(t *testing.T, c *sqs.Client, maxReceives int) (src, dlq, dlqARN string) {
	t.Helper()
	ctx := context.Background()
	name := testenv.Prefix(t)
	d, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: d.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := json.Marshal(map[string]string{"deadLetterTargetArn": a.Attributes["QueueArn"], "maxReceiveCount": strconv.Itoa(maxReceives)})
	s, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
		Attributes: map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": string(rp)}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(s.QueueUrl), aws.ToString(d.QueueUrl), a.Attributes["QueueArn"]
}

// The evidence path's "drained" rests on the three approximate counters of
// the feedback queue and its DLQ: a message is visible, then in flight
// after a receive, visible again when its visibility timeout runs out;
// delayed, then visible when its delay passes; in the DLQ once the redrive
// policy moves it; and counted nowhere once deleted. Each state is read
// without a receive in between, as a watermark reader would read them.
// fauxqs alone keeps calling a message in flight or delayed until someone
// receives from the queue (TestFauxqsAlone_CountersLagUntilAReceive); the
// SQS proxy counts as of the call.
func TestSQSCounters_VisibleInFlightDelayedDLQ_AsOfTheCall(t *testing.T) {
	env := testenv.Stack(t)
	checkCounters(t, env.Clients.SQS)
}

func checkCounters(t *testing.T, c *sqs.Client) {
	ctx := context.Background()
	src, dlq, _ := queuePair(t, c, 1)
	want := func(step string, url string, visible, inFlight, delayed int) {
		t.Helper()
		var got [3]int
		deadline := time.Now().Add(10 * time.Second)
		for {
			if got = counters(t, c, url); got == [3]int{visible, inFlight, delayed} {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: visible, in flight, delayed = %v, want %v", step, got, [3]int{visible, inFlight, delayed})
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	want("empty", src, 0, 0, 0)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	want("sent", src, 1, 0, 0)
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), VisibilityTimeout: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v %v", out, err)
	}
	want("received", src, 0, 1, 0)
	want("visibility timeout over", src, 1, 0, 0)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("b"), DelaySeconds: 1}); err != nil {
		t.Fatal(err)
	}
	want("delayed", src, 1, 0, 1)
	want("delay over", src, 2, 0, 0)
	// Both come back; "a" is on its second receive, past maxReceiveCount 1:
	// the receive moves it to the DLQ instead.
	var handles []*string
	for range 5 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			handles = append(handles, m.ReceiptHandle)
		}
		if len(handles) > 0 {
			break
		}
	}
	want("a moved to the DLQ, b received", src, 0, 1, 0)
	want("a in the DLQ", dlq, 1, 0, 0)
	for _, h := range handles {
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: h}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, c, dlq)
	want("deleted", src, 0, 0, 0)
	want("deleted from the DLQ", dlq, 0, 0, 0)
}

// Why the proxy recounts: fauxqs itself still counts a message whose
// visibility timeout ran out as in flight, and one whose delay passed as
// delayed, until something receives from the queue. If this test fails,
// fauxqs has learned to count, and the proxy's recount can go.
func TestFauxqsAlone_CountersLagUntilAReceive(t *testing.T) {
	env := testenv.Stack(t)
	raw := os.Getenv("CRITICIZER_TEST_FAUXQS_URL")
	if raw == "" {
		t.Skip("CRITICIZER_TEST_FAUXQS_URL is unset (devstack exec sets it)")
	}
	ctx := context.Background()
	c := queue.NewSQS(env.Clients.Config, raw)
	name := testenv.Prefix(t)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("d"), DelaySeconds: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the delay is over
	if got := counters(t, c, url); got != [3]int{0, 0, 1} {
		t.Fatalf("fauxqs counts %v a second after the delay ended; it used to say [0 0 1] (still delayed)", got)
	}
}

// A DLQ redrive (StartMessageMoveTask, the console) moves each message as a
// new one: AWS documents a new MessageId and a new enqueue time, and the
// receive count starts again; body and message attributes are kept. The
// local stack answers the real API (fauxqs has none), so the SDK call, and
// `aws sqs start-message-move-task`, work as on AWS.
func TestMessageMoveTask_RedriveGivesNewMessageIDs(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	c := env.Clients.SQS
	src, dlq, dlqARN := queuePair(t, c, 1)
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(`{"event":1}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("ses")}}})
	if err != nil {
		t.Fatal(err)
	}
	peek(t, c, src) // received once: the next receive moves it to the DLQ
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { return queueCount(t, c, dlq) == 1 })
	dead := peek(t, c, dlq)
	if aws.ToString(dead.MessageId) != aws.ToString(sent.MessageId) {
		t.Fatalf("the redrive policy moved the message under id %s, want its own id %s", aws.ToString(dead.MessageId), aws.ToString(sent.MessageId))
	}

	// The SDK names no destination: the messages go back to their source.
	moved, err := devstack.Redrive(ctx, c, dlqARN)
	if err != nil || moved != 1 {
		t.Fatalf("redrive moved %d: %v", moved, err)
	}
	back := drain(t, c, src)
	if len(back) != 1 {
		t.Fatalf("%d messages back in the source queue, want 1", len(back))
	}
	m := back[0]
	if aws.ToString(m.MessageId) == aws.ToString(sent.MessageId) {
		t.Fatal("the redriven message kept its MessageId; SQS gives it a new one")
	}
	if aws.ToString(m.Body) != `{"event":1}` || aws.ToString(m.MessageAttributes["kind"].StringValue) != "ses" {
		t.Fatalf("the redriven message lost its body or attributes: %+v", m)
	}
	if m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("ApproximateReceiveCount %s after a redrive, want 1 (a new message)", m.Attributes["ApproximateReceiveCount"])
	}
	oldSent, _ := strconv.ParseInt(dead.Attributes["SentTimestamp"], 10, 64)
	newSent, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
	if newSent <= oldSent {
		t.Fatalf("SentTimestamp %d after the redrive, want later than the original %d (a new enqueue time)", newSent, oldSent)
	}
	if n := queueCount(t, c, dlq); n != 0 {
		t.Fatalf("%d messages left in the DLQ", n)
	}
	list, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
	if err != nil || len(list.Results) != 1 {
		t.Fatalf("ListMessageMoveTasks: %+v %v", list, err)
	}
	if r := list.Results[0]; aws.ToString(r.Status) != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 1 ||
		aws.ToInt64(r.ApproximateNumberOfMessagesToMove) != 1 || r.TaskHandle != nil || r.DestinationArn != nil {
		t.Fatalf("task %+v: want COMPLETED, 1 of 1 moved, no handle (not running), no destination named", r)
	}

	// Only a DLQ can be redriven.
	var unsupported *sqstypes.UnsupportedOperation
	a, _ := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(src),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(a.Attributes["QueueArn"])}); !errors.As(err, &unsupported) {
		t.Fatalf("a move task from a queue that is no DLQ answered %v, want UnsupportedOperation", err)
	}

	// The operator's command, against the local stack.
	if _, err := exec.LookPath("aws"); err != nil {
		t.Log("no aws CLI: its part is skipped")
		return
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String("by hand")}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "aws", "sqs", "start-message-move-task", "--source-arn", dlqARN,
		"--destination-arn", a.Attributes["QueueArn"], "--max-number-of-messages-per-second", "5",
		"--endpoint-url", env.Endpoints.SQS, "--region", "us-east-1", "--output", "json")
	outCLI, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("aws sqs start-message-move-task: %v\n%s", err, outCLI)
	}
	var started struct{ TaskHandle string }
	if json.Unmarshal(outCLI, &started) != nil || started.TaskHandle == "" {
		t.Fatalf("aws sqs start-message-move-task printed %s", outCLI)
	}
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, c, dlq) == 0 && queueCount(t, c, src) == 1 })
}

// peek receives one message and makes it visible again at once.
func peek(t *testing.T, c *sqs.Client, url string) sqstypes.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("peek: %v %v", out, err)
	}
	m := out.Messages[0]
	if _, err := c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	return m
}

// What the proxy costs a call: SendMessage and an empty ReceiveMessage
// through the proxy and straight to fauxqs (figures, not assertions).
func BenchmarkSQSProxy(b *testing.B) {
	env := testenv.Stack(b)
	raw := os.Getenv("CRITICIZER_TEST_FAUXQS_URL")
	if raw == "" {
		b.Skip("CRITICIZER_TEST_FAUXQS_URL is unset (devstack exec sets it)")
	}
	ctx := context.Background()
	for _, via := range []struct{ name, endpoint string }{{"proxy", env.Endpoints.SQS}, {"fauxqs", raw}} {
		c := queue.NewSQS(env.Clients.Config, via.endpoint)
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.Prefix(b) + "-" + via.name)})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("SendMessage/"+via.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("GetQueueAttributes/"+via.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
					AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One move task runs per queue at a time; CancelMessageMoveTask stops it
// where it is, and ListMessageMoveTasks shows it CANCELLED with what it
// moved, as SQS documents.
func TestMessageMoveTask_OnePerQueue_CancelStopsIt(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	c := env.Clients.SQS
	src, dlq, dlqARN := queuePair(t, c, 1)
	for i := range 5 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	start, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	var unsupported *sqstypes.UnsupportedOperation
	if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)}); !errors.As(err, &unsupported) {
		t.Fatalf("a second task on the same queue answered %v, want UnsupportedOperation", err)
	}
	running, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
	if err != nil || len(running.Results) != 1 || aws.ToString(running.Results[0].TaskHandle) != aws.ToString(start.TaskHandle) ||
		aws.ToString(running.Results[0].Status) != "RUNNING" || aws.ToInt32(running.Results[0].MaxNumberOfMessagesPerSecond) != 1 {
		t.Fatalf("while running: %+v %v", running, err)
	}
	cancelled, err := c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
	if err != nil || len(list.Results) != 1 || aws.ToString(list.Results[0].Status) != "CANCELLED" ||
		list.Results[0].ApproximateNumberOfMessagesMoved != cancelled.ApproximateNumberOfMessagesMoved {
		t.Fatalf("after cancel: %+v %v (cancel said %d moved)", list, err, cancelled.ApproximateNumberOfMessagesMoved)
	}
	moved := int(cancelled.ApproximateNumberOfMessagesMoved)
	if moved >= 5 || queueCount(t, c, src) != moved || queueCount(t, c, dlq) != 5-moved {
		t.Fatalf("cancel said %d moved; source holds %d, DLQ %d", moved, queueCount(t, c, src), queueCount(t, c, dlq))
	}
	var notFound *sqstypes.ResourceNotFoundException
	if _, err := c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle}); !errors.As(err, &notFound) {
		t.Fatalf("cancelling a cancelled task answered %v, want ResourceNotFoundException", err)
	}
}
