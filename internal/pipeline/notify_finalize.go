package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// holdJob marks the job needs_intervention while a row is held for
// provider evidence longer than a healthy evidence path takes: the job
// must not read as in progress and certainly never as succeeded while a
// reviewer may or may not have the email. Notify keeps retrying the row,
// and finalizes the job once evidence (or an operator) settles it.
func (n *Notify) holdJob(ctx context.Context, j job.Job, rows []delivery.Row) {
	if j.Status == job.StatusNeedsIntervention {
		return
	}
	now := n.Now()
	for _, r := range rows {
		if r.Held(now, n.Margin) {
			if err := n.Jobs.SetStatus(ctx, j.ID, job.StageNotify, job.StatusNeedsIntervention, store.JobWrite{}); err != nil && !errors.Is(err, store.ErrConflict) {
				n.Log.WarnContext(ctx, "could not mark the job needs_intervention for a held delivery", "job_id", j.ID, "error", err)
			}
			n.Log.ErrorContext(ctx, "delivery held for provider evidence; the job needs intervention until it settles",
				"delivery_id", r.ID, "job_id", j.ID, "sent_by", r.SentBy())
			return
		}
	}
}

// finalize applies R-OUTBOX-8: succeeded only when every required
// recipient's row has notified_at; and R-REVIEWERS-1: the verdict holds
// only for the reviewers the run read (errReviewersAdded otherwise).
func (n *Notify) finalize(ctx context.Context, j job.Job, attempt int, rows []delivery.Row) error {
	var status job.Status
	switch delivery.Summarize(rows) {
	case delivery.Complete:
		status = job.StatusSucceeded
	case delivery.Blocked:
		status = job.StatusNeedsIntervention
	default:
		return retry.Transient(retry.InFlight, fmt.Errorf("job %s: deliveries still in flight", j.ID))
	}
	if err := n.announce(ctx, j.ID, channel.Finished); err != nil {
		return err // before the verdict: a retry announces it again (R-CHANNEL-4)
	}
	err := n.Jobs.FinishNotify(ctx, j.ID, attempt, status, j.AddedRev)
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	now, gerr := n.Jobs.Get(ctx, j.ID)
	if gerr != nil {
		return gerr
	}
	if now.Stage == job.StageNotify && now.AddedRev != j.AddedRev {
		return errReviewersAdded
	}
	return nil // a concurrent worker finalized it
}

// charged picks, of two retryable failures of one notify run, the one the
// stage reports. A RATE_LIMITED or AWAITING_EVIDENCE failure is deferred
// without spending the attempt budget (internal/stage), so it must not
// hide another row's failure that should spend it: otherwise a row failing
// with a 5xx next to a throttled one would be retried for ever.
func charged(prev, next error) error {
	if prev == nil {
		return next
	}
	if !spendsBudget(prev) {
		return next
	}
	return prev
}

// spendsBudget reports whether the stage runner charges a failure to the
// attempt budget: all but RATE_LIMITED, AWAITING_EVIDENCE and
// QUOTA_EXHAUSTED, which it defers (package stage).
func spendsBudget(err error) bool {
	c := retry.Classify(err).Class
	return c != retry.RateLimited && c != retry.AwaitingEvidence && c != retry.QuotaExhausted
}
