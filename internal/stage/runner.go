// Package stage is the SQS batch runner every stage function shares. Lambda
// hands it an events.SQSEvent; for each record it decodes the stage message,
// runs the stage with panics recovered, and on failure applies R-STAGE-1:
// classify, back off with ChangeMessageVisibility and report a batch item
// failure while the stage's budget lasts, else write the dead-letter
// envelope to the stage's DLQ and let the message go.
//
// Rate limiting is the exception to the budget (, critical
// test 6: "429 handling: worker backs off, doesn't exhaust attempts"). A
// RATE_LIMITED failure (SES or another upstream throttling us, or the send
// limiter of internal/ratelimit finding no room) says nothing about the
// message: it will succeed once the rate allows. Charging it to the budget
// would dead-letter good work whenever the account is busy. So the runner
// defers it instead: it sends a fresh copy of the message to the same
// queue with SQS DelaySeconds (the backoff, or Retry-After when larger,
// at least a second, at most 15 minutes) and lets the original go. SQS
// counts receives per message, so the copy carries job.Deferral: the
// attempts the earlier copies spent on other failures, and how many
// deferrals there were. The budget then counts only non-rate-limited
// failures (job.Message.BudgetAttempt), while GET /jobs shows every try
// (job.Message.Tries).
//
// Deferrals are capped (MaxDeferrals, 50 by default): past the cap a
// RATE_LIMITED failure is charged to the budget like any other, so a
// permanently throttled account (a suspended sending quota) still ends in
// the DLQ rather than circling for ever. With the full-jitter backoff
// growing to its 60 s bound, 50 deferrals are about 20 minutes of
// throttling on average (at most about 45; longer if the upstream's
// Retry-After asks for it, up to the 5 minute ceiling each). If the
// copy cannot be sent, the runner falls back to the ordinary backoff (the
// attempt is charged). A crash between sending the copy and deleting the
// original leaves two messages for the job: every stage is idempotent (the
// outbox claims rows one writer at a time), so the second finds the work
// done.
//
// The invocation's deadline is kept (R-STAGE-9, internal/deadline):
// Lambda ends an invocation at its timeout, returns no partial batch
// response, and the whole batch comes back after the visibility timeout
// with every receive counted. So the stage's work ends Reserve before the
// deadline, and a message after the first starts only while its stage's
// MessageTime is left; the others are handed back as fresh copies, not
// charged to the budget (see unstarted). On the last receive the queue's
// redrive policy allows (MaxReceives), a message that fails, or cannot
// be started, is dead-lettered here with its envelope instead of being
// moved raw (R-STAGE-10).
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
	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// Func is one stage's work for one message. attempt counts from 1 and is
// this stage's own (R-STAGE-3: "Failure in one stage MUST NOT consume
// attempts from other stages").
type Func func(ctx context.Context, m job.Message, attempt int) error

// Queue is what the runner needs from SQS.
type Queue interface {
	Delay(ctx context.Context, queueURL, receiptHandle string, d time.Duration) error
	DeadLetter(ctx context.Context, stage job.Stage, body []byte) error
	// Requeue sends body to the queue, delivered after delay (at most 15
	// minutes): a rate-limited message's deferred copy.
	Requeue(ctx context.Context, queueURL, body string, delay time.Duration) error
}

// DefaultMaxDeferrals is how many times a message may be deferred for rate
// limiting before RATE_LIMITED counts against the budget (see the package
// comment).
const DefaultMaxDeferrals = 50

// maxDeferDelay is SQS's DelaySeconds limit.
const maxDeferDelay = 15 * time.Minute

// FailureRecorder stores a failure on the job for GET /jobs and triage
// (store.Jobs.RecordFailure). A role interface because the stage runner
// links no AWS service client (R-LAYER-1) and store does.
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
	// MaxDeferrals caps rate-limit deferrals per message; below 0, never
	// defer (every failure is charged to the budget).
	MaxDeferrals int
	// MessageTime is the longest one message of this stage may take, its
	// failure handling included: a message after the first of a batch
	// starts only while this much of the invocation is left before
	// Reserve (R-STAGE-9). It is the stage's own worst case (llm: the
	// model's timeout; notify: a send and its mark; fetch: a source
	// request's timeout).
	MessageTime time.Duration
	// Reserve is kept back from the invocation's deadline for the
	// runner's bookkeeping (failures, backoffs, dead letters, handing back
	// the messages not started) and the answer; the stage's work ends
	// there.
	Reserve time.Duration
	// MaxReceives is the queue's redrive maxReceiveCount: on the last
	// receive SQS gives a message, the runner dead-letters it itself,
	// with its envelope, rather than let the redrive policy move it
	// without one (R-STAGE-10). Zero: unknown, no such check.
	MaxReceives int
	// DeadLettered, if set, is told of a job's own stage message before
	// the job is recorded dead-lettered (not of a task's): the wiring
	// announces the version Finished, not reviewed, to the channels other
	// than email (R-CHANNEL-4). Its failure keeps the message, retried.
	DeadLettered func(ctx context.Context, m job.Message) error

	mu  sync.Mutex
	rnd *rand.Rand
}

// Option configures a Runner.
type Option func(*Runner)

// WithRand fixes the jitter source (tests, `make chaos` seeds).
func WithRand(r *rand.Rand) Option { return func(x *Runner) { x.rnd = r } }

// WithMaxDeferrals sets the cap on rate-limit deferrals per message.
func WithMaxDeferrals(n int) Option { return func(x *Runner) { x.MaxDeferrals = n } }

// WithMessageTime sets the stage's per-message need (Runner.MessageTime).
func WithMessageTime(d time.Duration) Option { return func(x *Runner) { x.MessageTime = d } }

// WithReserve sets the time kept back from the deadline (Runner.Reserve).
func WithReserve(d time.Duration) Option { return func(x *Runner) { x.Reserve = d } }

// WithMaxReceives tells the runner its queue's maxReceiveCount
// (Runner.MaxReceives).
func WithMaxReceives(n int) Option { return func(x *Runner) { x.MaxReceives = n } }

// WithDeadLettered sets Runner.DeadLettered.
func WithDeadLettered(f func(ctx context.Context, m job.Message) error) Option {
	return func(x *Runner) { x.DeadLettered = f }
}

// WithClock sets the clock the runner's timestamps and deadline checks
// read (tests move it by hand).
func WithClock(now func() time.Time) Option { return func(x *Runner) { x.Now = now } }

// New returns a runner with the R-STAGE-1 default policy.
func New(stage job.Stage, queueURL string, fn Func, q Queue, jobs FailureRecorder, log *slog.Logger, opts ...Option) *Runner {
	r := &Runner{Stage: stage, QueueURL: queueURL, Func: fn, Queue: q, Jobs: jobs, Policy: retry.DefaultPolicy(),
		Log: log.With("stage", string(stage)), Now: time.Now, MaxDeferrals: DefaultMaxDeferrals,
		MessageTime: DefaultMessageTime, Reserve: DefaultReserve}
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
//
// It keeps the invocation's deadline (R-STAGE-9): the stage's work ends
// Reserve before it; before each message after the first it checks that
// MessageTime is left, and hands back the rest unstarted (handBack). The
// first always starts: every invocation begins with the whole timeout,
// so waiting would never give it more, and its calls' own derived
// timeouts cut what overruns.
func (r *Runner) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	plan := deadline.Budget{Need: r.MessageTime, Reserve: r.Reserve, Now: r.Now}.Plan(ctx)
	work, endWork := plan.Work(ctx)
	defer endWork()
	after, endAfter := plan.After(ctx)
	defer endAfter()
	for i, rec := range ev.Records {
		if i > 0 && !plan.Allows() {
			for _, id := range r.handBack(after, ev.Records[i:]) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
			break
		}
		if !r.record(work, after, rec) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

// record processes one record and reports whether it is done with (true:
// succeeded or dead-lettered, so it may be deleted). The stage runs under
// work; what follows it (recording the failure, the backoff, the dead
// letter) under ctx, which outlives work.
func (r *Runner) record(work, ctx context.Context, rec events.SQSMessage) bool {
	received := receiveCount(rec)
	m, prior, err := r.decode(rec.Body)
	decoded := err == nil
	// attempt is what the stage and GET /jobs see (every try); budget is
	// what the policy charges (rate-limited tries excluded).
	attempt, budget := m.Tries(received), m.BudgetAttempt(received)
	log := r.Log.With("message_id", rec.MessageId, "attempt", attempt)
	if m.Deferral != nil {
		log = log.With("budget_attempt", budget, "rate_limit_deferrals", m.Deferral.Count)
	}
	if decoded {
		log = log.With("job_id", string(m.JobID))
		err = r.run(work, m, attempt)
	}
	if prior != nil {
		// A replay of a dead-letter envelope (R-STAGE-5), counted once
		// per attempt whatever its outcome.
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage)}, map[string]float64{"Replays": 1})
		log = log.With("replay_of", prior.ID)
	}
	if err == nil {
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "Outcome": "succeeded"}, map[string]float64{"Attempts": float64(attempt), "Succeeded": 1})
		log.InfoContext(ctx, "stage succeeded")
		return true
	}
	if decoded && r.deferrable(m, err) {
		if r.deferCopy(ctx, rec, m, prior, received, attempt, err, log) {
			return true
		}
	}
	r.mu.Lock()
	d := r.Policy.Decide(budget, err, r.rnd)
	r.mu.Unlock()
	var extra map[string]string
	if (d.Retry || d.Exhausted) && r.lastReceive(received) {
		// SQS will not hand the message over again: its redrive policy
		// would move it to the DLQ without an envelope (R-STAGE-10). The
		// envelope says so, also when the budget ran out at the same time.
		d = retry.Decision{Err: d.Err, Exhausted: true}
		extra = map[string]string{"receives_exhausted": "true", "max_receive_count": strconv.Itoa(r.MaxReceives)}
	}
	class := string(d.Err.Class)
	log = log.With("error_class", class, "retryable", d.Err.Retryable())
	if d.Retry {
		r.recordFailure(ctx, m, class, attempt, job.StatusRetryableFailed, "")
		obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "ErrorClass": class}, map[string]float64{"Retries": 1})
		// The error text may hold addresses or tokens from an upstream
		// answer; logs get it redacted.
		log.WarnContext(ctx, "stage failed; retrying", "delay_ms", d.Delay.Milliseconds(), "error", err)
		if derr := r.Queue.Delay(ctx, r.QueueURL, rec.ReceiptHandle, d.Delay); derr != nil {
			log.WarnContext(ctx, "could not set the backoff; the queue's visibility timeout applies", "error", derr)
		}
		return false
	}
	return r.deadLetter(ctx, rec, m, prior, d, err, attempt, extra, log)
}

// deadLetter writes the R-STAGE-4 envelope to the stage's DLQ and reports
// whether the message may go. extra adds to the envelope's sanitized
// context (plain counts and flags only).
//
// The job is marked dead_lettered only once the envelope is in the DLQ
// (R-STAGE-4): a job recorded dead_lettered always has its envelope
// there, whatever dies next. Before the send the failure is recorded as
// retryable_failed, which is what it is until the envelope is written: an
// invocation that dies at the send (Lambda's timeout, a crash) or a send
// that fails keeps the message, which comes back and dead-letters again.
// That first write also returns when the stage first failed, which the
// envelope carries. A death between the send and the mark leaves the
// envelope and the message: the redelivery writes the envelope again,
// with the same id (deadletter.EnvelopeID: stage, message id, first
// receive), then marks the job. A duplicate envelope is the price; a
// dead-lettered job with none is never seen.
func (r *Runner) deadLetter(ctx context.Context, rec events.SQSMessage, m job.Message, prior *deadletter.Envelope,
	d retry.Decision, err error, attempt int, extra map[string]string, log *slog.Logger) bool {
	class := string(d.Err.Class)
	first := r.recordFailure(ctx, m, class, attempt, job.StatusRetryableFailed, "")
	env := r.envelope(rec, m, prior, err, attempt, first, d.Exhausted)
	if len(extra) > 0 {
		if env.SanitizedContext == nil {
			env.SanitizedContext = map[string]string{}
		}
		for k, v := range extra {
			env.SanitizedContext[k] = v
		}
	}
	body, merr := json.Marshal(env)
	if merr == nil && r.DeadLettered != nil && m.Task == "" {
		merr = r.DeadLettered(ctx, m)
	}
	if merr == nil {
		merr = r.Queue.DeadLetter(ctx, r.Stage, body)
	}
	if merr != nil {
		// Keep the message: it will be retried, and after MaxReceiveCount
		// the queue's redrive policy moves it to the DLQ as it is (a raw
		// item, which `criticizer dlq` lists and replays all the same).
		log.ErrorContext(ctx, "could not write the dead-letter envelope", "error", merr, "last_receive", r.lastReceive(receiveCount(rec)))
		return false
	}
	r.recordFailure(ctx, m, class, attempt, job.StatusDeadLettered, env.ID)
	counts := map[string]float64{"DeadLetters": 1}
	if env.Escalated {
		counts["Escalations"] = 1
	}
	obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "ErrorClass": class}, counts)
	log.ErrorContext(ctx, "stage dead-lettered", "envelope_id", env.ID, "exhausted", d.Exhausted, "escalated", env.Escalated,
		"receives_exhausted", extra["receives_exhausted"] == "true", "error", err)
	return true
}

// deferrable reports whether a failure is deferred rather than charged to
// the budget: a retryable RATE_LIMITED or AWAITING_EVIDENCE while
// deferrals are left. Neither says anything about the message: one waits
// for the send rate, the other for the provider's evidence of a send
// whose answer was lost.
//
// QUOTA_EXHAUSTED (the provider's daily quota spent) is deferred too, and
// without the cap: the quota comes back as the rolling window moves on,
// so the work waits for it and is never dead-lettered for it (R-RATE-3).
func (r *Runner) deferrable(m job.Message, err error) bool {
	c := retry.Classify(err)
	if c == nil || !c.Retryable() || r.MaxDeferrals < 0 {
		return false
	}
	if c.Class == retry.QuotaExhausted {
		return true
	}
	if c.Class != retry.RateLimited && c.Class != retry.AwaitingEvidence {
		return false
	}
	done := 0
	if m.Deferral != nil {
		done = m.Deferral.Count
	}
	return done < r.MaxDeferrals
}

// deferCopy records the failure, sends the deferred copy and reports
// whether the original may go. On false the caller charges the attempt as
// usual.
func (r *Runner) deferCopy(ctx context.Context, rec events.SQSMessage, m job.Message, prior *deadletter.Envelope,
	received, attempt int, err error, log *slog.Logger) bool {
	c := retry.Classify(err)
	var next job.Message
	var delay time.Duration
	if c.Class == retry.QuotaExhausted {
		// A pause lasts what the quota's owner asked for (its recheck
		// interval, as Retry-After), beyond the policy's ceiling, and is
		// not counted against the cap on deferrals (R-RATE-3).
		next, delay = m.PausedCopy(received), c.RetryAfter
	} else {
		next = m.Deferred(received)
		r.mu.Lock()
		delay = r.Policy.Delay(next.Deferral.Count, c.RetryAfter, r.rnd)
		r.mu.Unlock()
	}
	// A rate window is a second: sooner is pointless.
	delay = min(max(delay, time.Second), maxDeferDelay)
	body, berr := deferredBody(next, prior)
	if berr != nil {
		log.ErrorContext(ctx, "could not encode the deferred copy; charging the attempt", "error", berr)
		return false
	}
	class := string(c.Class)
	r.recordFailure(ctx, m, class, attempt, job.StatusRetryableFailed, "")
	if qerr := r.Queue.Requeue(ctx, r.QueueURL, body, delay); qerr != nil {
		log.WarnContext(ctx, "could not defer the rate-limited message; charging the attempt", "error", qerr)
		return false
	}
	obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage), "ErrorClass": class}, map[string]float64{"Retries": 1})
	log.WarnContext(ctx, "stage deferred without spending the attempt budget", "error_class", class,
		"delay_ms", delay.Milliseconds(), "deferrals", next.Deferral.Count, "pauses", next.Deferral.Paused, "budget_spent", next.Deferral.Spent, "error", err)
	return true
}

// deferredBody is the body of a deferred copy: the stage message, or, for
// a replay, the replayed envelope around it (so a later dead letter still
// counts as a failed replay of the same envelope).
func deferredBody(m job.Message, prior *deadletter.Envelope) (string, error) {
	if prior != nil {
		m.ReplayOf = "" // decode sets it from the envelope
	}
	b, err := json.Marshal(m)
	if err != nil || prior == nil {
		return string(b), err
	}
	env := *prior
	env.Original.Body = string(b)
	b, err = json.Marshal(env)
	return string(b), err
}

// withoutDeferral drops the runner's bookkeeping from a stage message kept
// in a dead-letter envelope, so a replay starts with a fresh budget (seed
// 001 R-STAGE-5). Bodies that are not stage messages are kept as they are.
func withoutDeferral(body string) string {
	var m job.Message
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&m) != nil || m.Deferral == nil {
		return body
	}
	m.Deferral = nil
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return string(b)
}

// run calls the stage with panics turned into errors (RUNTIME_BUG,
// non-retryable: R-STAGE-1 "Configuration/runtime bug").
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

// recordFailure stores a failure of m on its job. A task's failure
// (job.Message.Task) is not the job's: the job's status and attempts say
// how its own stages went, so they are left alone (the task is retried
// and dead-lettered all the same, and its envelope names the job).
func (r *Runner) recordFailure(ctx context.Context, m job.Message, class string, attempt int, status job.Status, envelopeID string) time.Time {
	id := m.JobID
	if id == "" || r.Jobs == nil || m.Task != "" {
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

// envelope builds the R-STAGE-4 dead-letter payload; first is when the
// stage first failed, as the job records it (zero: now). The envelope id is
// derived from the message (its id and first receive), so a crash between
// writing the envelope and deleting the message yields the same id on the
// next attempt; a failed replay keeps the id of the envelope it replayed,
// with the replay count up, and is escalated when the same non-retryable
// class recurs (R-STAGE-5).
func (r *Runner) envelope(rec events.SQSMessage, m job.Message, prior *deadletter.Envelope, err error, attempt int, first time.Time, exhausted bool) deadletter.Envelope {
	now := r.Now().UTC()
	id := deadletter.EnvelopeID(string(r.Stage), rec.MessageId, firstReceive(rec, now))
	if prior != nil {
		id = prior.ID
	}
	if first.IsZero() || first.After(now) {
		first = now
	}
	env := deadletter.New(deadletter.Failure{
		Stage: string(r.Stage), JobID: string(m.JobID), Err: err, Attempts: attempt,
		FirstFailureAt: first, LastFailureAt: now,
		Context: map[string]string{
			"message_id": rec.MessageId, "queue": rec.EventSourceARN, "receive_count": strconv.Itoa(receiveCount(rec)),
			"exhausted": strconv.FormatBool(exhausted), "body_sha256": sha(rec.Body),
		},
		Message: deadletter.Original{MessageID: rec.MessageId, Body: rec.Body, Queue: rec.EventSourceARN},
	})
	if m.Deferral != nil {
		if env.SanitizedContext == nil {
			env.SanitizedContext = map[string]string{}
		}
		env.SanitizedContext["budget_attempt"] = strconv.Itoa(m.BudgetAttempt(receiveCount(rec)))
		env.SanitizedContext["rate_limit_deferrals"] = strconv.Itoa(m.Deferral.Count)
	}
	env.ID = id
	if prior != nil {
		env = deadletter.Refail(*prior, env, now)
	}
	env.Original.Body = withoutDeferral(env.Original.Body)
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
