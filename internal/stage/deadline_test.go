package stage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
)

// fakeClock is the runner's clock, moved by the stage's work: an
// invocation's minutes pass without waiting. Deadlines stay real (a
// context's timer is), so an invocation's is set well after the clock's
// start and never reached in real time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// invoke hands up to n queued messages to the runner as one batch under a
// deadline of d from the clock's now, as Lambda would, and applies the
// answer: reported failures stay queued, the rest are deleted. It returns
// the answer and the message ids the batch held.
func (q *sqsSim) invoke(t *testing.T, r *stage.Runner, c *fakeClock, n int, d time.Duration) (events.SQSEventResponse, []string) {
	t.Helper()
	q.mu.Lock()
	var ev events.SQSEvent
	var ids []string
	for _, m := range q.queue[:min(n, len(q.queue))] {
		m.receives++
		ids = append(ids, m.id)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.id, ReceiptHandle: "rh-" + m.id, Body: m.body,
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:notify",
			Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives),
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(c.t.UnixMilli(), 10)}})
	}
	q.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(d))
	defer cancel()
	resp, err := r.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.queue[:0]
	for _, m := range q.queue {
		if failed[m.id] || !contains(ids, m.id) {
			kept = append(kept, m)
		}
	}
	q.queue = kept
	return resp, ids
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// A batch whose deadline arrives mid-batch: the messages started finish
// (a success, a retryable failure with its backoff), the ones there is no
// time for are not started and are handed back as fresh copies, visible at
// once, charged nothing: no failure on the job, no backoff, no dead
// letter, and their next run is their first attempt. A copy of a message
// that had already failed twice carries those two attempts, not a third.
// Rules: R-STAGE-9, R-STAGE-3.
func TestDeadline_MidBatch_StartedFinish_UnstartedHandedBackUncharged(t *testing.T) {
	c := &fakeClock{t: time.Now()}
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	var ran []string
	var attempts []int
	fn := func(_ context.Context, m job.Message, attempt int) error {
		ran, attempts = append(ran, string(m.JobID)), append(attempts, attempt)
		c.advance(30 * time.Second) // a slow model call
		if m.JobID == "j2" && attempt == 1 {
			return upstream5xx()
		}
		return nil
	}
	r := newRunner(fn, q, f, log, stage.WithClock(c.now), stage.WithMessageTime(20*time.Second), stage.WithReserve(5*time.Second))
	for i := 1; i <= 5; i++ {
		q.add(body(t, job.Message{JobID: job.ID("j" + strconv.Itoa(i)), Stage: job.StageNotify}))
	}
	q.queue[4].receives = 2 // j5 failed twice before (its receives were charged)

	// 100 s: j1 (0-30 s), j2 (30-60 s), j3 (60-90 s): at 90 s only 5 s are
	// left before the reserve, less than a message's 20 s.
	resp, _ := q.invoke(t, r, c, 10, 100*time.Second)
	if got := len(ran); got != 3 {
		t.Fatalf("%d messages started (%v), want 3", got, ran)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-2" {
		t.Fatalf("batch item failures %+v, want only j2's (m-2), which failed", resp.BatchItemFailures)
	}
	if len(f.list) != 1 || f.list[0].ErrorClass != string(retry.Upstream5xx) {
		t.Fatalf("failures recorded %+v, want j2's only", f.list)
	}
	if len(q.delays) != 1 || len(q.dlq) != 0 {
		t.Fatalf("backoffs %v, dead letters %d: want j2's backoff only", q.delays, len(q.dlq))
	}
	if len(q.requeues) != 2 || q.requeues[0] != 0 || q.requeues[1] != 0 {
		t.Fatalf("copies sent with delays %v, want two, visible at once", q.requeues)
	}
	// What remains: j2 (backing off) and the two copies.
	var copies []job.Message
	for _, m := range q.queue {
		var jm job.Message
		if err := json.Unmarshal([]byte(m.body), &jm); err != nil {
			t.Fatal(err)
		}
		if m.id != "m-2" {
			if m.receives != 0 {
				t.Errorf("copy %s of %s starts at receive %d", m.id, jm.JobID, m.receives)
			}
			copies = append(copies, jm)
		}
	}
	if len(copies) != 2 || copies[0].JobID != "j4" || copies[0].Deferral != nil ||
		copies[1].JobID != "j5" || copies[1].Deferral == nil || copies[1].Deferral.Spent != 2 || copies[1].Deferral.Count != 0 {
		t.Fatalf("copies %+v; want j4 as it was, j5 carrying its 2 spent attempts", copies)
	}

	// The next invocation runs everything left; the copies' tries are
	// numbered as if the unstarted receive had not happened.
	ran, attempts = nil, nil
	q.invoke(t, r, c, 10, 900*time.Second)
	want := map[string]int{"j2": 2, "j4": 1, "j5": 3}
	for i, id := range ran {
		if want[id] != attempts[i] {
			t.Errorf("%s ran as attempt %d, want %d", id, attempts[i], want[id])
		}
	}
	if len(ran) != 3 || len(q.queue) != 0 || len(q.dlq) != 0 {
		t.Fatalf("ran %v, %d left, %d dead letters", ran, len(q.queue), len(q.dlq))
	}
}

// When the copy of a message not started cannot be sent, the message is a
// batch item failure whose visibility is reset to 0, so it comes back at
// once rather than after the visibility timeout.
// Rules: R-STAGE-9.
func TestDeadline_CopyFails_ReturnsAtOnce(t *testing.T) {
	c := &fakeClock{t: time.Now()}
	q, f, log := &sqsSim{failSend: true}, &failures{}, &bytes.Buffer{}
	fn := func(context.Context, job.Message, int) error { c.advance(50 * time.Second); return nil }
	r := newRunner(fn, q, f, log, stage.WithClock(c.now), stage.WithMessageTime(20*time.Second))
	q.add(body(t, job.Message{JobID: "j1", Stage: job.StageNotify}))
	q.add(body(t, job.Message{JobID: "j2", Stage: job.StageNotify}))
	resp, _ := q.invoke(t, r, c, 10, 60*time.Second)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-2" {
		t.Fatalf("failures %+v, want j2's", resp.BatchItemFailures)
	}
	if len(q.delays) != 1 || q.delays[0] != 0 {
		t.Fatalf("visibility changes %v, want one to 0", q.delays)
	}
	if len(f.list) != 0 || len(q.dlq) != 0 {
		t.Fatalf("a message not started was charged: failures %+v, dead letters %d", f.list, len(q.dlq))
	}
}

func decodeOne(t *testing.T, q *sqsSim) deadletter.Envelope {
	t.Helper()
	if len(q.dlq) != 1 {
		t.Fatalf("%d dead letters, want 1", len(q.dlq))
	}
	env, isEnv, err := deadletter.Decode(q.dlq[0])
	if err != nil || !isEnv {
		t.Fatalf("dead letter is not an envelope: %v", err)
	}
	return env
}

// On the last receive SQS gives a message (maxReceiveCount), a retryable
// failure with budget left is dead-lettered by the runner with its full
// envelope, under the usual id, and the message deleted; the redrive
// policy would otherwise move it on the next receive without one. Without
// the queue's maxReceiveCount the runner retries it as before.
// Rules: R-STAGE-10, R-STAGE-4.
func TestDeadline_LastReceive_WritesTheFullEnvelope(t *testing.T) {
	// maxReceives 5: the budget runs out on the last receive too; the
	// envelope says both.
	for _, maxReceives := range []int{0, 3, 5} {
		c := &fakeClock{t: time.Now().Truncate(time.Millisecond)}
		q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
		fn, _ := script(upstream5xx())
		r := newRunner(fn, q, f, log, stage.WithClock(c.now), stage.WithMaxReceives(maxReceives))
		q.add(body(t, job.Message{JobID: "j_last", Stage: job.StageNotify}))
		q.queue[0].receives = max(maxReceives, 3) - 1 // receives that ended without an answer
		resp, _ := q.invoke(t, r, c, 10, time.Minute)
		if maxReceives == 0 {
			if len(resp.BatchItemFailures) != 1 || len(q.dlq) != 0 {
				t.Fatalf("unknown maxReceiveCount: failures %v, dead letters %d; want a retry", resp.BatchItemFailures, len(q.dlq))
			}
			continue
		}
		if len(resp.BatchItemFailures) != 0 || len(q.queue) != 0 {
			t.Fatalf("the message was kept (%+v): the redrive policy would move it without an envelope", resp.BatchItemFailures)
		}
		env := decodeOne(t, q)
		if env.Stage != "notify" || env.JobID != "j_last" || env.ErrorClass != string(retry.Upstream5xx) || !env.Retryable ||
			env.Attempts != maxReceives || env.LastStack == "" || env.FirstFailureAt.IsZero() || env.LastFailureAt.IsZero() ||
			env.Original.MessageID != "m-1" || env.Original.Body == "" {
			t.Fatalf("envelope incomplete: %+v", env)
		}
		if want := deadletter.EnvelopeID("notify", "m-1", c.t); env.ID != want {
			t.Errorf("envelope id %s, want %s (stage, message id, first receive)", env.ID, want)
		}
		sc := env.SanitizedContext
		if n := strconv.Itoa(maxReceives); sc["receives_exhausted"] != "true" || sc["max_receive_count"] != n || sc["receive_count"] != n || sc["exhausted"] != "true" {
			t.Errorf("sanitized context %v does not say the receives ran out", sc)
		}
		if f.last != job.StatusDeadLettered || f.list[len(f.list)-1].EnvelopeID != env.ID {
			t.Errorf("the job does not name the dead letter: %+v %s", f.list, f.last)
		}
	}
}

// A message there is no time to start, on its last receive or with its
// budget spent by earlier receives that ended without an answer (killed
// invocations), is dead-lettered with its envelope, marked not started;
// one with budget and receives left is handed back.
// Rules: R-STAGE-10, R-STAGE-9.
func TestDeadline_NotStartedOnItsLastReceive_Envelope(t *testing.T) {
	for _, tc := range []struct {
		name      string
		receives  int // before this one
		dead      bool
		exhausted bool
	}{
		{"receives left", 1, false, false},
		{"last receive", 9, true, true},
		{"budget spent by killed invocations", 5, true, false},
	} {
		c := &fakeClock{t: time.Now()}
		q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
		fn := func(context.Context, job.Message, int) error { c.advance(50 * time.Second); return nil }
		r := newRunner(fn, q, f, log, stage.WithClock(c.now), stage.WithMessageTime(20*time.Second), stage.WithMaxReceives(10))
		q.add(body(t, job.Message{JobID: "j_first", Stage: job.StageNotify}))
		q.add(body(t, job.Message{JobID: "j_late", Stage: job.StageNotify}))
		q.queue[1].receives = tc.receives
		resp, _ := q.invoke(t, r, c, 10, 60*time.Second)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: failures %+v", tc.name, resp.BatchItemFailures)
		}
		if !tc.dead {
			if len(q.dlq) != 0 || len(q.requeues) != 1 {
				t.Fatalf("%s: dead letters %d, copies %d; want it handed back", tc.name, len(q.dlq), len(q.requeues))
			}
			continue
		}
		env := decodeOne(t, q)
		if env.JobID != "j_late" || env.ErrorClass != string(retry.NetworkTimeout) || !env.Retryable ||
			env.SanitizedContext["not_started"] != "true" || (env.SanitizedContext["receives_exhausted"] == "true") != tc.exhausted {
			t.Fatalf("%s: envelope %+v", tc.name, env)
		}
		if len(q.requeues) != 0 || len(q.queue) != 0 {
			t.Fatalf("%s: copies %d, left %d", tc.name, len(q.requeues), len(q.queue))
		}
		if !strings.Contains(env.LastStack, stage.ErrNotStarted.Error()) {
			t.Errorf("%s: last_stack does not say why: %s", tc.name, env.LastStack)
		}
	}
}
