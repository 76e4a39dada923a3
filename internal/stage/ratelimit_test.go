package stage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
)

// sqsSim is an in-memory SQS queue with the semantics the runner relies
// on: a message's ApproximateReceiveCount grows with each receive, a
// ChangeMessageVisibility keeps the same message (and its count), a new
// SendMessage starts a new message at count 1, and a message the handler
// reports done is deleted.
type sqsSim struct {
	mu       sync.Mutex
	next     int
	queue    []*simMsg
	dlq      [][]byte
	delays   []time.Duration // visibility backoffs
	requeues []time.Duration // deferred copies' DelaySeconds
	failSend bool
}

type simMsg struct {
	id       string
	body     string
	receives int
}

func (q *sqsSim) add(body string) {
	q.next++
	q.queue = append(q.queue, &simMsg{id: "m-" + strconv.Itoa(q.next), body: body})
}

func (q *sqsSim) Delay(_ context.Context, _, _ string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delays = append(q.delays, d)
	return nil
}

func (q *sqsSim) DeadLetter(_ context.Context, _ job.Stage, body []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dlq = append(q.dlq, body)
	return nil
}

func (q *sqsSim) Requeue(_ context.Context, _, body string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failSend {
		return errors.New("sqs send: AccessDenied (simulated)")
	}
	q.requeues = append(q.requeues, d)
	q.add(body)
	return nil
}

// drain delivers messages one at a time until the queue is empty or limit
// receives have happened; it returns the number of receives.
func (q *sqsSim) drain(t *testing.T, r *stage.Runner, limit int) int {
	t.Helper()
	n := 0
	for ; n < limit; n++ {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.mu.Unlock()
			return n
		}
		m := q.queue[0]
		m.receives++
		q.mu.Unlock()
		rec := events.SQSMessage{MessageId: m.id, ReceiptHandle: "rh-" + m.id, Body: m.body,
			Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}}
		resp, err := r.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
		if err != nil {
			t.Fatal(err)
		}
		q.mu.Lock()
		if len(resp.BatchItemFailures) == 0 {
			q.queue = q.queue[1:] // deleted
		}
		q.mu.Unlock()
	}
	t.Fatalf("queue not drained after %d receives", limit)
	return n
}

type failures struct {
	mu   sync.Mutex
	list []job.Failure
	last job.Status
}

func (f *failures) RecordFailure(_ context.Context, _ job.ID, fl job.Failure, st job.Status) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, fl)
	f.last = st
	return time.Time{}, nil
}

// script returns a stage Func failing with errs[i] on its i-th call (nil:
// success), recording the attempt number each call saw.
func script(errs ...error) (stage.Func, *[]int) {
	var seen []int
	return func(_ context.Context, _ job.Message, attempt int) error {
		seen = append(seen, attempt)
		if len(seen) > len(errs) {
			return nil
		}
		return errs[len(seen)-1]
	}, &seen
}

func throttled() error {
	return retry.Transient(retry.RateLimited, errors.New("ses: TooManyRequestsException (test)"))
}

func upstream5xx() error {
	return &retry.Error{Class: retry.Upstream5xx, Status: 503, Err: errors.New("503 (test)")}
}

func newRunner(fn stage.Func, q *sqsSim, f *failures, log *bytes.Buffer, opts ...stage.Option) *stage.Runner {
	opts = append([]stage.Option{stage.WithRand(retry.NewRand(7))}, opts...)
	return stage.New(job.StageNotify, "https://sqs.local/notify", fn, q, f, obs.NewLogger(log, "debug"), opts...)
}

func body(t *testing.T, m job.Message) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func repeat(n int, f func() error) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = f()
	}
	return out
}

// : "429 handling: Worker backs off,
// doesn't exhaust attempts". Twelve throttled tries (more than twice the
// budget of 5, R-STAGE-3) then a success: no dead letter, each
// throttle deferred as a fresh copy with a delay of at least a second,
// the job's failure recorded as retryable_failed/RATE_LIMITED, and the
// stage saw every try counted (1..13).
// Rules: R-STAGE-6.
func TestRateLimit_ThrottleDoesNotSpendBudget(t *testing.T) {
	const throttles = 12
	fn, seen := script(repeat(throttles, throttled)...)
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log)
	q.add(body(t, job.Message{JobID: "j_1", Stage: job.StageNotify}))

	q.drain(t, r, 100)
	if len(q.dlq) != 0 {
		t.Fatalf("dead-lettered after %d throttles: %s", throttles, q.dlq[0])
	}
	if len(*seen) != throttles+1 {
		t.Fatalf("stage ran %d times, want %d", len(*seen), throttles+1)
	}
	for i, a := range *seen {
		if a != i+1 {
			t.Fatalf("attempts seen %v, want 1..%d", *seen, throttles+1)
		}
	}
	if len(q.requeues) != throttles || len(q.delays) != 0 {
		t.Fatalf("%d deferred copies and %d visibility backoffs; want %d and 0", len(q.requeues), len(q.delays), throttles)
	}
	for _, d := range q.requeues {
		if d < time.Second || d > 15*time.Minute {
			t.Errorf("deferral delay %s outside [1s, 15m]", d)
		}
	}
	if len(f.list) != throttles || f.list[0].ErrorClass != "RATE_LIMITED" || f.last != job.StatusRetryableFailed {
		t.Errorf("failures recorded %+v (last status %s); want %d RATE_LIMITED, retryable_failed", f.list, f.last, throttles)
	}
	if !strings.Contains(log.String(), `"Retries":1`) || !strings.Contains(log.String(), `"ErrorClass":"RATE_LIMITED"`) {
		t.Errorf("no Retries metric with ErrorClass RATE_LIMITED in the log:\n%s", log)
	}
}

// The budget counts only non-rate-limited failures, across deferred
// copies (R-STAGE-3 with ): 5xx, throttle, 5xx,
// throttle, throttle, 5xx, 5xx, 5xx is the fifth charged failure on the
// eighth try, and dead-letters there, with the envelope saying both.
func TestRateLimit_BudgetCountsOnlyOtherFailures(t *testing.T) {
	fn, seen := script(upstream5xx(), throttled(), upstream5xx(), throttled(), throttled(), upstream5xx(), upstream5xx(), upstream5xx(), nil)
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log)
	q.add(body(t, job.Message{JobID: "j_2", Stage: job.StageNotify}))

	q.drain(t, r, 100)
	if len(*seen) != 8 {
		t.Fatalf("stage ran %d times (attempts %v), want 8: the fifth charged failure is final", len(*seen), *seen)
	}
	if len(q.dlq) != 1 {
		t.Fatalf("%d dead letters, want 1", len(q.dlq))
	}
	env, ok, err := deadletter.Decode(q.dlq[0])
	if err != nil || !ok {
		t.Fatalf("not an envelope: %v %s", err, q.dlq[0])
	}
	if env.ErrorClass != "UPSTREAM_5XX" || env.Attempts != 8 || env.SanitizedContext["budget_attempt"] != "5" ||
		env.SanitizedContext["rate_limit_deferrals"] != "3" || env.SanitizedContext["exhausted"] != "true" {
		t.Errorf("envelope class %s attempts %d context %v; want UPSTREAM_5XX, 8 tries, budget_attempt 5, 3 deferrals, exhausted",
			env.ErrorClass, env.Attempts, env.SanitizedContext)
	}
	// A replay must start with a fresh budget: the kept original carries no
	// deferral bookkeeping, and still decodes strictly.
	if strings.Contains(env.Original.Body, "deferral") {
		t.Errorf("the envelope's original body keeps the runner's bookkeeping: %s", env.Original.Body)
	}
	if f.last != job.StatusDeadLettered {
		t.Errorf("job status %s, want dead_lettered", f.last)
	}
}

// Deferrals are capped so a permanently throttled account still ends in
// the DLQ: past MaxDeferrals a RATE_LIMITED failure is charged like any
// other, and the budget's 5 attempts follow.
func TestRateLimit_DeferralsCappedThenBudgetApplies(t *testing.T) {
	fn, seen := script(repeat(100, throttled)...)
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log, stage.WithMaxDeferrals(3))
	q.add(body(t, job.Message{JobID: "j_3", Stage: job.StageNotify}))

	q.drain(t, r, 100)
	if len(q.requeues) != 3 || len(q.delays) != 4 || len(*seen) != 8 || len(q.dlq) != 1 {
		t.Fatalf("%d deferrals, %d backoffs, %d tries, %d dead letters; want 3, 4, 8, 1",
			len(q.requeues), len(q.delays), len(*seen), len(q.dlq))
	}
	env, _, _ := deadletter.Decode(q.dlq[0])
	if env.ErrorClass != "RATE_LIMITED" || env.SanitizedContext["exhausted"] != "true" {
		t.Errorf("envelope %s exhausted=%s; want RATE_LIMITED, exhausted", env.ErrorClass, env.SanitizedContext["exhausted"])
	}
	if DefaultMax := stage.DefaultMaxDeferrals; DefaultMax != 50 || stage.New(job.StageNotify, "", fn, q, f, obs.NewLogger(log, "info")).MaxDeferrals != 50 {
		t.Errorf("default cap %d, want 50 (documented)", DefaultMax)
	}
}

// If the deferred copy cannot be sent (SQS down, a missing permission), the
// runner falls back to the ordinary backoff and charges the attempt: the
// message is never lost.
func TestRateLimit_RequeueFailsFallsBackToBackoff(t *testing.T) {
	fn, seen := script(throttled(), throttled(), nil)
	q, f, log := &sqsSim{failSend: true}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log)
	q.add(body(t, job.Message{JobID: "j_4", Stage: job.StageNotify}))

	q.drain(t, r, 100)
	if len(*seen) != 3 || len(q.delays) != 2 || len(q.dlq) != 0 {
		t.Fatalf("%d tries, %d backoffs, %d dead letters; want 3, 2, 0", len(*seen), len(q.delays), len(q.dlq))
	}
	if !strings.Contains(log.String(), "could not defer") {
		t.Error("the fallback is not logged")
	}
}

// A replayed dead letter (R-STAGE-5) that is throttled is deferred as
// the same envelope around the deferred message, so when it fails for good
// it is still a failed replay of that envelope (same id, replays + 1).
func TestRateLimit_ReplayDeferredKeepsEnvelope(t *testing.T) {
	prior := deadletter.New(deadletter.Failure{Stage: "notify", JobID: "j_5", Err: upstream5xx(), Attempts: 5,
		LastFailureAt: time.Now(), Message: deadletter.Original{MessageID: "orig", Body: `{"job_id":"j_5","stage":"notify"}`}})
	prior.ID = "env-5"
	pb, _ := json.Marshal(prior)

	var replayOf []string
	calls := 0
	fn := func(_ context.Context, m job.Message, _ int) error {
		replayOf = append(replayOf, m.ReplayOf)
		calls++
		if calls <= 2 {
			return throttled()
		}
		return retry.Permanent(retry.PolicyRejected, fmt.Errorf("rejected (test)"))
	}
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log)
	q.add(string(pb))

	q.drain(t, r, 100)
	if len(q.requeues) != 2 || len(q.dlq) != 1 {
		t.Fatalf("%d deferrals, %d dead letters; want 2, 1", len(q.requeues), len(q.dlq))
	}
	for _, id := range replayOf {
		if id != "env-5" {
			t.Fatalf("replay_of seen %v, want env-5 on every try", replayOf)
		}
	}
	env, ok, err := deadletter.Decode(q.dlq[0])
	if err != nil || !ok || env.ID != "env-5" || env.Replays != 1 || strings.Contains(env.Original.Body, "deferral") {
		t.Fatalf("dead letter id %s replays %d original %s (%v); want env-5, 1, no deferral", env.ID, env.Replays, env.Original.Body, err)
	}
}
