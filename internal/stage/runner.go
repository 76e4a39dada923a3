// Package stage is the SQS batch runner every stage function shares. Lambda
// hands it an events.SQSEvent; for each record it decodes the stage message,
// runs the stage with panics recovered, and on failure applies seed 001 §8:
// classify, back off with ChangeMessageVisibility and report a batch item
// failure while the stage's budget lasts, else write the dead-letter
// envelope to the stage's DLQ and let the message go.
package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// Func is one stage's work for one message. attempt counts from 1 and is
// this stage's own (seed 001 §8.3: "Failure in one stage MUST NOT consume
// attempts from other stages").
type Func func(ctx context.Context, m job.Message, attempt int) error

// Queue is what the runner needs from SQS.
type Queue interface {
	Delay(ctx context.Context, queueURL, receiptHandle string, d time.Duration) error
	DeadLetter(ctx context.Context, stage job.Stage, body []byte) error
}

// FailureRecorder stores a failure on the job for GET /jobs and triage.
type FailureRecorder interface {
	RecordFailure(ctx context.Context, id job.ID, f job.Failure, status job.Status) (time.Time, error)
}

// Runner runs one stage.
type Runner struct {
	Stage    job.Stage
	QueueURL string
	Func     Func
	Queue    Queue
	Jobs     FailureRecorder
	Policy   retry.Policy
	Log      *slog.Logger
	Now      func() time.Time

	mu  sync.Mutex
	rnd *rand.Rand
}

// Option configures a Runner.
type Option func(*Runner)

// WithRand fixes the jitter source (tests, `make chaos` seeds).
func WithRand(r *rand.Rand) Option { return func(x *Runner) { x.rnd = r } }

// New returns a runner with the §8 default policy.
func New(stage job.Stage, queueURL string, fn Func, q Queue, jobs FailureRecorder, log *slog.Logger, opts ...Option) *Runner {
	r := &Runner{Stage: stage, QueueURL: queueURL, Func: fn, Queue: q, Jobs: jobs, Policy: retry.DefaultPolicy(),
		Log: log.With("stage", string(stage)), Now: time.Now}
	for _, o := range opts {
		o(r)
	}
	if r.rnd == nil {
		var seed [8]byte
		sum := sha256.Sum256([]byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
		copy(seed[:], sum[:])
		r.rnd = retry.NewRand(uint64(seed[0]) | uint64(seed[1])<<8 | uint64(seed[2])<<16 | uint64(seed[3])<<24 |
			uint64(seed[4])<<32 | uint64(seed[5])<<40 | uint64(seed[6])<<48 | uint64(seed[7])<<56)
	}
	return r
}

// Handle is the Lambda handler: it reports failed records as batch item
// failures (ReportBatchItemFailures) and never fails the whole batch.
func (r *Runner) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if !r.record(ctx, rec) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

// record processes one record and reports whether it is done with (true:
// succeeded or dead-lettered, so it may be deleted).
func (r *Runner) record(ctx context.Context, rec events.SQSMessage) bool {
	attempt := receiveCount(rec)
	log := r.Log.With("message_id", rec.MessageId, "attempt", attempt)
	m, prior, err := r.decode(rec.Body)
	if err == nil {
		log = log.With("job_id", string(m.JobID))
		err = r.run(ctx, m, attempt)
	}
	if prior != nil {
		// A replay of a dead-letter envelope (seed 001 §8.5), counted once
		// per attempt whatever its outcome.
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage)}, map[string]float64{"Replays": 1})
		log = log.With("replay_of", prior.ID)
	}
	if err == nil {
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "Outcome": "succeeded"}, map[string]float64{"Attempts": float64(attempt), "Succeeded": 1})
		log.InfoContext(ctx, "stage succeeded")
		return true
	}
	r.mu.Lock()
	d := r.Policy.Decide(attempt, err, r.rnd)
	r.mu.Unlock()
	class := string(d.Err.Class)
	log = log.With("error_class", class, "retryable", d.Err.Retryable())
	if d.Retry {
		r.recordFailure(ctx, m.JobID, class, attempt, job.StatusRetryableFailed, "")
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "ErrorClass": class}, map[string]float64{"Retries": 1})
		// The error text may hold addresses or tokens from an upstream
		// answer; logs get it redacted.
		log.WarnContext(ctx, "stage failed; retrying", "delay_ms", d.Delay.Milliseconds(), "error", err)
		if derr := r.Queue.Delay(ctx, r.QueueURL, rec.ReceiptHandle, d.Delay); derr != nil {
			log.WarnContext(ctx, "could not set the backoff; the queue's visibility timeout applies", "error", derr)
		}
		return false
	}
	env := r.envelope(ctx, rec, m, prior, d, err, attempt)
	body, merr := json.Marshal(env)
	if merr == nil {
		merr = r.Queue.DeadLetter(ctx, r.Stage, body)
	}
	if merr != nil {
		// Keep the message: it will be retried, and after MaxReceiveCount
		// the queue's redrive policy moves it to the DLQ as it is.
		log.ErrorContext(ctx, "could not write the dead-letter envelope", "error", merr)
		return false
	}
	counts := map[string]float64{"DeadLetters": 1}
	if env.Escalated {
		counts["Escalations"] = 1
	}
	obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "ErrorClass": class}, counts)
	log.ErrorContext(ctx, "stage dead-lettered", "envelope_id", env.ID, "exhausted", d.Exhausted, "escalated", env.Escalated,
		"error", err)
	return true
}

// run calls the stage with panics turned into errors (RUNTIME_BUG,
// non-retryable: seed 001 §8.1 "Configuration/runtime bug").
func (r *Runner) run(ctx context.Context, m job.Message, attempt int) (err error) {
	defer retry.Recover(&err)
	return r.Func(ctx, m, attempt)
}

// decode reads a record body: a stage message, or a dead-letter envelope
// being replayed (by `criticizer dlq replay` or an SQS redrive/move task
// from the DLQ), whose original message is resumed at this stage.
func (r *Runner) decode(body string) (job.Message, *deadletter.Envelope, error) {
	env, isEnv, err := deadletter.Decode([]byte(body))
	if err != nil {
		return job.Message{}, nil, retry.Permanent(retry.SchemaInvalid, err)
	}
	var prior *deadletter.Envelope
	if isEnv {
		prior = &env
		body = env.Original.Body
	}
	var m job.Message
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return job.Message{}, prior, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("stage message: %w", err))
	}
	if m.JobID == "" {
		return job.Message{}, prior, retry.Permanent(retry.SchemaInvalid, errors.New("stage message: job_id is empty"))
	}
	// The queue decides the stage: a replay to this queue resumes here.
	m.Stage = r.Stage
	if prior != nil {
		m.ReplayOf = prior.ID
	}
	return m, prior, nil
}

func (r *Runner) recordFailure(ctx context.Context, id job.ID, class string, attempt int, status job.Status, envelopeID string) time.Time {
	if id == "" || r.Jobs == nil {
		return time.Time{}
	}
	first, err := r.Jobs.RecordFailure(ctx, id, job.Failure{Stage: r.Stage, ErrorClass: class, Attempt: attempt, At: r.Now().UTC(), EnvelopeID: envelopeID}, status)
	if err != nil {
		r.Log.WarnContext(ctx, "could not record the failure on the job", "job_id", string(id), "error", err)
	}
	return first
}

func receiveCount(rec events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// envelope builds the §8.4 dead-letter payload and records the dead letter
// on the job. The envelope id is derived from the message (its id and first
// receive), so a crash between writing the envelope and deleting the message
// yields the same id on the next attempt; a failed replay keeps the id of
// the envelope it replayed, with the replay count up, and is escalated when
// the same non-retryable class recurs (§8.5).
func (r *Runner) envelope(ctx context.Context, rec events.SQSMessage, m job.Message, prior *deadletter.Envelope, d retry.Decision, err error, attempt int) deadletter.Envelope {
	now := r.Now().UTC()
	id := deadletter.EnvelopeID(string(r.Stage), rec.MessageId, firstReceive(rec, now))
	if prior != nil {
		id = prior.ID
	}
	first := r.recordFailure(ctx, m.JobID, string(d.Err.Class), attempt, job.StatusDeadLettered, id)
	if first.IsZero() || first.After(now) {
		first = now
	}
	env := deadletter.New(deadletter.Failure{
		Stage: string(r.Stage), JobID: string(m.JobID), Err: err, Attempts: attempt,
		FirstFailureAt: first, LastFailureAt: now,
		Context: map[string]string{
			"message_id": rec.MessageId, "queue": rec.EventSourceARN, "receive_count": strconv.Itoa(attempt),
			"exhausted": strconv.FormatBool(d.Exhausted), "body_sha256": sha(rec.Body),
		},
		Message: deadletter.Original{MessageID: rec.MessageId, Body: rec.Body, Queue: rec.EventSourceARN},
	})
	env.ID = id
	if prior != nil {
		env = deadletter.Refail(*prior, env, now)
	}
	return env
}

// firstReceive is SQS's ApproximateFirstReceiveTimestamp, or now.
func firstReceive(rec events.SQSMessage, now time.Time) time.Time {
	ms, err := strconv.ParseInt(rec.Attributes["ApproximateFirstReceiveTimestamp"], 10, 64)
	if err != nil || ms <= 0 {
		return now
	}
	return time.UnixMilli(ms).UTC()
}
