package stage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// DefaultMessageTime is a stage's per-message need when its constructor
// sets none (Runner.MessageTime).
const DefaultMessageTime = 10 * time.Second

// DefaultReserve is the time kept back from an invocation's deadline for
// the runner's bookkeeping and its answer (Runner.Reserve): a few SQS and
// DynamoDB calls, each normally tens of milliseconds.
const DefaultReserve = 5 * time.Second

// ErrNotStarted is the failure of a message the runner dead-letters
// without starting it: it came on the last receive SQS gives it, or with
// its budget already spent, and the invocation had no time left to try
// it. Its earlier receives ended without an answer (invocations that
// Lambda ended at their timeout, or that crashed). Classified
// NETWORK_TIMEOUT, retryable: a replay runs the stage again.
var ErrNotStarted = errors.New("not started: too little of the invocation was left, and earlier receives ended without an answer")

// lastReceive reports whether SQS will not hand the message over again:
// its next receive would be moved to the DLQ by the redrive policy.
func (r *Runner) lastReceive(received int) bool {
	return r.MaxReceives > 0 && received >= r.MaxReceives
}

// handBack deals with the messages an invocation has no time to start
// (R-STAGE-9) and returns the ids to report as batch item failures.
func (r *Runner) handBack(ctx context.Context, recs []events.SQSMessage) []string {
	var failed []string
	for _, rec := range recs {
		if !r.unstarted(ctx, rec) {
			failed = append(failed, rec.MessageId)
		}
	}
	return failed
}

// unstarted hands back one message that was never tried and reports
// whether the original may be deleted.
//
// It must not spend the stage's budget, yet SQS counts every receive, and
// the budget is read from the receive count (job.Message.BudgetAttempt).
// So the message is re-sent as a fresh copy, visible at once, whose
// receive count starts again at 1, carrying in job.Deferral what its
// earlier receives spent (not this one); the original goes. A batch item
// failure instead would charge the next try for this receive, and bring
// the message back only after the queue's visibility timeout (six
// function timeouts) unless its visibility were also reset.
//
// When the copy cannot be sent, the message is reported as a batch item
// failure with its visibility set to 0: it was never tried, so it comes
// back at once (at the price of one receive) rather than after the
// visibility timeout.
//
// A message on its last receive, or whose budget its earlier receives
// already spent, is dead-lettered with its envelope instead (R-STAGE-10):
// those receives ended without an answer, so a copy would only start the
// count again for a message that has held invocations until they died.
func (r *Runner) unstarted(ctx context.Context, rec events.SQSMessage) bool {
	received := receiveCount(rec)
	m, prior, err := r.decode(rec.Body)
	if err != nil {
		// Nothing to run: an undecodable message is dead-lettered at once,
		// which takes no time of the stage's.
		return r.record(ctx, ctx, rec)
	}
	spent := m.BudgetAttempt(received) - 1
	log := r.Log.With("message_id", rec.MessageId, "job_id", string(m.JobID), "receive_count", received)
	if r.lastReceive(received) || (spent > 0 && r.Policy.Exhausted(spent)) {
		cause := retry.Transient(retry.NetworkTimeout, fmt.Errorf("stage %s: %w: %w", r.Stage, ErrNotStarted, context.DeadlineExceeded))
		d := retry.Decision{Err: retry.Classify(cause), Exhausted: true}
		extra := map[string]string{"not_started": "true"}
		if r.lastReceive(received) {
			extra["receives_exhausted"], extra["max_receive_count"] = "true", strconv.Itoa(r.MaxReceives)
		}
		return r.deadLetter(ctx, rec, m, prior, d, cause, max(m.Tries(received)-1, 1), extra, log)
	}
	obs.Metric(ctx, r.Log, map[string]string{"Stage": string(r.Stage)}, map[string]float64{"NotStarted": 1})
	body, berr := deferredBody(uncharged(m, received), prior)
	if berr == nil {
		berr = r.Queue.Requeue(ctx, r.QueueURL, body, 0)
	}
	if berr == nil {
		log.InfoContext(ctx, "stage not started: too little of the invocation left; re-sent without spending the budget")
		return true
	}
	log.WarnContext(ctx, "stage not started, and the copy could not be sent; the message returns at once, its receive counted", "error", berr)
	if derr := r.Queue.Delay(ctx, r.QueueURL, rec.ReceiptHandle, 0); derr != nil {
		log.WarnContext(ctx, "could not make the message visible again; the queue's visibility timeout applies", "error", derr)
	}
	return false
}

// uncharged is the copy of m to re-send for a message received
// receiveCount times whose last receive was not tried: the budget its
// earlier receives spent, and its rate-limit deferrals, travel in
// job.Deferral; the copy's own first receive then counts as this one
// would have (job.Message.BudgetAttempt, Tries).
func uncharged(m job.Message, receiveCount int) job.Message {
	spent, count := m.BudgetAttempt(receiveCount)-1, 0
	if m.Deferral != nil {
		count = m.Deferral.Count
	}
	if spent <= 0 && count == 0 {
		m.Deferral = nil
		return m
	}
	m.Deferral = &job.Deferral{Spent: max(spent, 0), Count: count}
	return m
}
