package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store"
)

// Bounds of the wait for a newer version (R-QUIET-3): notify looks again
// after about as long as the newest version it waits for has taken so
// far, at least minNewerWait and at most maxNewerWait. The ceiling stays
// below the sweeper's stuck threshold (CRITICIZER_SWEEP_STUCK_AFTER,
// which must exceed 5 minutes), so the sweeper never starts a second
// look while the delayed message is on its way; a wait that long is a
// newer version held for provider evidence or for a person.
const (
	minNewerWait = 2 * time.Second
	maxNewerWait = 4 * time.Minute
)

// waiting is what a notify run leaves for later: the rows that a newer
// version may still reach (delivery.Undecided), unclaimed.
type waiting struct {
	rows map[string]bool
	// since is when the youngest of the versions waited for was
	// accepted.
	since time.Time
}

func (w *waiting) hold(id string) {
	if w.rows == nil {
		w.rows = map[string]bool{}
	}
	w.rows[id] = true
}

func (w *waiting) undecided(accepted time.Time) {
	if accepted.After(w.since) {
		w.since = accepted
	}
}

// holds reports whether the row waits.
func (w waiting) holds(id string) bool { return w.rows[id] }

// any reports whether some row waits.
func (w waiting) any() bool { return len(w.rows) > 0 }

// delay is how long to wait before looking again.
func (w waiting) delay(now time.Time) time.Duration {
	return min(max(now.Sub(w.since), minNewerWait), maxNewerWait)
}

// await ends a run whose other rows are settled while some wait for a
// newer version (R-QUIET-3): the job stays at notify, touched (its
// updated_at now, in_progress unless a row already needs a person), and
// a copy of the notify message is sent delayed to look again. Waiting is
// not a failure (R-STAGE-6): nothing is charged to the stage's budget,
// no function sleeps. Should that message be lost, the sweeper re-enqueues
// the job once it is unchanged for its stuck threshold (R-STAGE-8).
func (n *Notify) await(ctx context.Context, j job.Job, rows []delivery.Row, w waiting) error {
	status := job.StatusInProgress
	for _, r := range rows {
		if r.Status == delivery.StatusFailedPermanent || r.Status == delivery.StatusReconciling {
			status = job.StatusNeedsIntervention
		}
	}
	if err := n.Jobs.SetStatus(ctx, j.ID, job.StageNotify, status, store.JobWrite{}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // finalized meanwhile by another run: nothing waits
		}
		return err
	}
	delay := w.delay(n.Now())
	m := job.Message{JobID: j.ID, Stage: job.StageNotify}
	var err error
	if dq, ok := n.Queue.(pipeline.DelayedEnqueuer); ok {
		err = dq.EnqueueAfter(ctx, m, delay)
	} else {
		err = n.Queue.Enqueue(ctx, m)
	}
	if err != nil {
		return fmt.Errorf("enqueue %s for %s after %s: %w", job.StageNotify, j.ID, delay, err)
	}
	n.Log.InfoContext(ctx, "deliveries wait for a newer version to reach their recipients", "job_id", j.ID,
		"waiting", len(w.rows), "delay", delay.Round(time.Second).String())
	return nil
}
