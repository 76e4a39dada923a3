package stage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
)

// lossyDLQ is sqsSim whose next `lose` dead-letter sends never reach
// SQS: the request is lost, or the invocation is killed (a crash, Lambda's
// timeout) at that call, before SQS stores anything.
type lossyDLQ struct {
	*sqsSim
	lose int
}

func (q *lossyDLQ) DeadLetter(ctx context.Context, s job.Stage, body []byte) error {
	if q.lose > 0 {
		q.lose--
		return fmt.Errorf("sqs send: %w", context.DeadlineExceeded)
	}
	return q.sqsSim.DeadLetter(ctx, s, body)
}

// deliverOne hands the first queued message to the runner, on its next
// receive, and deletes it unless the runner reports it failed.
func (q *lossyDLQ) deliverOne(t *testing.T, r *stage.Runner) {
	t.Helper()
	m := q.queue[0]
	m.receives++
	rec := events.SQSMessage{MessageId: m.id, ReceiptHandle: "rh-" + m.id, Body: m.body,
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives), "ApproximateFirstReceiveTimestamp": "1767225600000"}}
	resp, err := r.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) == 0 {
		q.queue = q.queue[1:]
	}
}

// markWatch is the jobs table: it records failures as store.Jobs does and
// checks, at the moment a job is marked dead_lettered, that the DLQ
// already holds the envelope the mark names — what GET /jobs, `criticizer
// dlq` and the chaos campaign's checker rely on, whenever they look and
// whatever dies next.
type markWatch struct {
	failures
	q      *sqsSim
	status job.Status
	early  []string
}

func (w *markWatch) RecordFailure(ctx context.Context, id job.ID, fl job.Failure, st job.Status) (time.Time, error) {
	if st == job.StatusDeadLettered && !w.inDLQ(fl.EnvelopeID) {
		w.early = append(w.early, fmt.Sprintf("%s marked dead_lettered (attempt %d) before envelope %s was in the DLQ", id, fl.Attempt, fl.EnvelopeID))
	}
	w.status = st
	return w.failures.RecordFailure(ctx, id, fl, st)
}

func (w *markWatch) inDLQ(id string) bool {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	for _, b := range w.q.dlq {
		if env, ok, err := deadletter.Decode(b); err == nil && ok && env.ID == id {
			return true
		}
	}
	return false
}

// A non-retryable failure (a malformed diff, SCHEMA_INVALID) whose
// dead-letter send never reaches SQS — the invocation killed at that call,
// or the request lost — must not leave its job dead_lettered with no
// envelope: the job is marked only once the envelope is in the DLQ, and
// until then says its failure will be retried (its message is kept and
// comes back). The redelivered message writes the envelope, under the
// same id, then marks the job.
// Rules: R-STAGE-4, R-STAGE-10.
func TestDeadLetter_SendNeverArrives_JobNotMarkedUntilTheEnvelopeIs(t *testing.T) {
	q := &lossyDLQ{sqsSim: &sqsSim{}, lose: 1}
	w := &markWatch{q: q.sqsSim}
	bad := retry.Permanent(retry.SchemaInvalid, errors.New("critic: invalid diff (test)"))
	fn := func(context.Context, job.Message, int) error { return bad }
	r := stage.New(job.StageLLM, "https://sqs.local/llm", fn, q, w, obs.NewLogger(&bytes.Buffer{}, "debug"), stage.WithRand(retry.NewRand(7)))
	q.add(body(t, job.Message{JobID: "j1", Stage: job.StageLLM}))

	if q.deliverOne(t, r); len(q.queue) != 1 {
		t.Fatalf("after the lost send: %d messages queued; want the message kept", len(q.queue))
	}
	if len(q.dlq) != 0 {
		t.Fatalf("%d envelopes in the DLQ after a send that never arrived", len(q.dlq))
	}
	if w.status == job.StatusDeadLettered {
		t.Fatalf("job dead_lettered with no envelope in the DLQ while its message waits to come back (marks: %v)", w.early)
	}
	if len(w.list) == 0 || w.list[len(w.list)-1].ErrorClass != string(retry.SchemaInvalid) {
		t.Fatalf("failures recorded %+v: want the SCHEMA_INVALID failure on the job", w.list)
	}

	q.deliverOne(t, r) // the message comes back
	if len(q.queue) != 0 || len(q.dlq) != 1 {
		t.Fatalf("after the redelivery: %d messages queued, %d envelopes; want the message gone and one envelope", len(q.queue), len(q.dlq))
	}
	if w.status != job.StatusDeadLettered || len(w.early) > 0 {
		t.Fatalf("job %s at the end, marks before their envelope: %v", w.status, w.early)
	}
	env, _, _ := deadletter.Decode(q.dlq[0])
	if want := w.list[len(w.list)-1].EnvelopeID; env.ID != want || env.Attempts != 2 {
		t.Fatalf("envelope %s (attempts %d); the job's mark names %s: want the same id, attempt 2", env.ID, env.Attempts, want)
	}
}
