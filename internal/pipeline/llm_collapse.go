package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// DelayedEnqueuer sends a stage message that becomes visible after a
// delay (queue.Client.EnqueueAfter).
type DelayedEnqueuer interface {
	EnqueueAfter(ctx context.Context, m job.Message, delay time.Duration) error
}

// collapseDelay is how long j's notify stage waits so that a burst of
// versions is mailed once, about the latest (R-QUIET-3): until Collapse
// after the version was accepted. A review that took longer waits no
// more; an explicit version, which nothing supersedes, waits not at all
// (R-RERUN-2).
func (l *LLM) collapseDelay(j job.Job) time.Duration {
	if l.Collapse <= 0 || !j.Quiet() {
		return 0
	}
	return max(0, j.CreatedAt.Add(l.Collapse).Sub(l.Now()))
}

// finishCollapsed is finish for the llm stage: the critique is persisted,
// then notify is enqueued after the collapse window's delay (a delayed
// SQS message: waiting is not a failure and takes no function time,
// R-STAGE-6). Without a delay, or a queue that can delay, it is finish.
func (l *LLM) finishCollapsed(ctx context.Context, j job.Job, attempt int, w store.JobWrite) error {
	delay := l.collapseDelay(j)
	dq, ok := l.Queue.(DelayedEnqueuer)
	if delay <= 0 || !ok {
		return l.finish(ctx, j, job.StageLLM, attempt, w)
	}
	if err := l.Jobs.Advance(ctx, j.ID, job.StageLLM, attempt, job.StatusInProgress, w); err != nil {
		return fmt.Errorf("advance %s past %s: %w", j.ID, job.StageLLM, err)
	}
	if err := dq.EnqueueAfter(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, delay); err != nil {
		return fmt.Errorf("enqueue %s for %s after %s: %w", job.StageNotify, j.ID, delay, err)
	}
	l.Log.InfoContext(ctx, "notify waits out the collapse window", "job_id", j.ID, "delay", delay.Round(time.Second).String())
	return nil
}
