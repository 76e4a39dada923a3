package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Requeue (the runner's rate-limit deferral, )
// sends a new message that SQS holds back for the delay and then delivers
// with a receive count of 1, on the local SQS emulator.
// Rules: R-STAGE-6.
func TestRequeue_DelayedFreshMessage(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	c := queue.New(env.Clients.SQS, res.Queues)
	url := res.Queues.Queue[job.StageNotify]
	const body = `{"job_id":"j_q","stage":"notify","deferral":{"spent":1,"count":1}}`
	ctx := context.Background()
	if err := c.Requeue(ctx, url, body, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if msgs, err := c.Receive(ctx, url, 10, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("right after a 2 s delayed send: %d messages (%v); want none yet", len(msgs), err)
	}
	var got string
	var count string
	for range 5 {
		msgs, err := c.Receive(ctx, url, 10, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			got, count = *msgs[0].Body, msgs[0].Attributes["ApproximateReceiveCount"]
			break
		}
	}
	if got != body || count != "1" {
		t.Fatalf("received %q (receive count %q); want the body, count 1", got, count)
	}
}

// Counts reads, with the counters, the settings that bound how long a
// message can stay in the queue unseen — the visibility timeout and the
// redrive policy's maxReceiveCount — on the local SQS emulator as on AWS
// (internal/drain's Horizon); a DLQ, which has no redrive policy, tells
// no maxReceiveCount.
// Rules: R-EVIDENCE-2.
func TestCounts_ReadsTheQueuesSettings(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	c := queue.New(env.Clients.SQS, res.Queues)
	n, err := c.Counts(context.Background(), res.FeedbackQueue)
	if err != nil {
		t.Fatal(err)
	}
	if n.VisibilityTimeout != 30*time.Second || n.MaxReceiveCount != 10 || !n.Empty() {
		t.Fatalf("counts %+v; want an empty queue, visibility 30 s, 10 receives", n)
	}
	if d, err := c.Counts(context.Background(), res.FeedbackDLQ); err != nil || d.MaxReceiveCount != 0 {
		t.Fatalf("DLQ counts %+v %v", d, err)
	}
}
