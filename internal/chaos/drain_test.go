package chaos

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// R-STAGE-4: a dead-lettered job's envelope is in the DLQ. A stage writes
// the job's dead_lettered status before it sends the envelope; an
// invocation that dies between the two leaves its message in flight, and
// the retry sends the envelope after the visibility timeout. The
// campaign's drain (seed 4, rate 0.1) stopped the workers once every job
// was terminal, before that retry, and reported a job dead-lettered with
// no envelope. The drain is over only when the stage queues are empty:
// a message in flight (or visible) keeps it waiting, with every job
// terminal.
func TestStagesQuiet_WaitsForMessagesInFlight(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	ctx := context.Background()
	chk := &checker{clean: env.Clients, res: res}
	q := res.Queues.Queue[job.StageLLM]
	if _, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q),
		MessageBody: aws.String(`{"job_id":"j_dead_lettered","stage":"llm"}`)}); err != nil {
		t.Fatal(err)
	}
	// An invocation received it and died: in flight, not visible.
	got, err := env.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q), VisibilityTimeout: 60, WaitTimeSeconds: 2})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(got.Messages))
	}
	open, busy, err := chk.quiet(ctx, map[job.ID]bool{}) // every job terminal
	if err != nil {
		t.Fatal(err)
	}
	if open != 0 || busy != 1 {
		t.Fatalf("quiet = %d open jobs, %d stage messages; want 0 and the 1 in flight: the drain would stop the workers before the retry that sends the envelope", open, busy)
	}
	if _, err := env.Clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q), ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, busy, err := chk.quiet(ctx, map[job.ID]bool{}); err != nil || busy != 0 {
		t.Fatalf("quiet after the delete: %d stage messages, %v; want 0", busy, err)
	}
}
