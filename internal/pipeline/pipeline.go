// Package pipeline holds the work of each stage — fetch, llm, notify — as
// functions of a stage message. The stage runner (package stage) owns
// retries, backoff and dead letters; a stage here only does its work,
// persists its result, then enqueues the next stage, and returns an error
// that package retry can classify.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Blobs stores diffs (blob.Store, in S3). A reference whose object is gone
// is reported NOT_FOUND (permanent).
type Blobs interface {
	Put(ctx context.Context, prefix string, b []byte) (ref, sha string, err error)
	Get(ctx context.Context, ref string, limit int64) ([]byte, error)
}

// Base is what every stage needs. The notify stage has no Blobs.
type Base struct {
	Jobs  Jobs
	Blobs Blobs
	Queue Enqueuer
	Log   *slog.Logger
	Now   func() time.Time
	// Posts: announce each version's phases to the channels other than
	// email (announce.go, R-CHANNEL-4). False (the explorer, offline
	// tests): no post task is sent.
	Posts bool
}

// Jobs is the part of store.Jobs the stages call. Why a role interface
// rather than store.Jobs itself: the explorer (internal/explore) stands
// between the stages and memstore on every call they make, recording
// each as a step it can reorder and crash at; this is that set of calls,
// so a stage calling one more method of the contract shows up here and
// there. Every write is typed (store.JobWrite): no stage names a stored
// attribute.
type Jobs interface {
	Get(ctx context.Context, id job.ID) (job.Job, error)
	Advance(ctx context.Context, id job.ID, from job.Stage, attempt int, status job.Status, w store.JobWrite) error
	SetStatus(ctx context.Context, id job.ID, at job.Stage, status job.Status, w store.JobWrite) error
	NoEmailReviewers(ctx context.Context, id job.ID) ([]string, error)
	GetSourceRef(ctx context.Context, id job.ID) (store.SourceRef, error)
	PinBase(ctx context.Context, id job.ID, sha string) (string, error)
	AddReviewers(ctx context.Context, id job.ID, addrs, identities []string) (job.Job, error)
	FinishNotify(ctx context.Context, id job.ID, attempt int, status job.Status, addedRev int) error
	Reopen(ctx context.Context, id job.ID) error
}

// MaxDiffBytes bounds what a stage reads back from the blob store.
const MaxDiffBytes = 1 << 20

// begin loads the job for a stage message and decides whether the stage has
// work to do. It returns ok=false when the stage is already done: then, if
// the job sits exactly at the next stage, it enqueues that stage again,
// because a crash between "persist" and "enqueue" would otherwise strand it.
func (b *Base) begin(ctx context.Context, m job.Message, stage job.Stage) (job.Job, bool, error) {
	j, err := b.Jobs.Get(ctx, m.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return job.Job{}, false, retry.Permanent(retry.NotFound, err)
	}
	if err != nil {
		// A throttle, 5xx or timeout on the read is the store's, not the
		// message's: classified as it is and retried within the budget.
		return job.Job{}, false, err
	}
	switch {
	case j.Stage == stage:
		return j, true, nil
	case stage.Before(j.Stage):
		if j.Stage == stage.Next() && j.Stage != job.StageDone {
			b.Log.InfoContext(ctx, "stage already done; re-enqueueing the next stage", "job_id", j.ID, "stage", stage)
			return j, false, b.enqueue(ctx, j.ID, j.Stage)
		}
		b.Log.InfoContext(ctx, "stage already done", "job_id", j.ID, "stage", stage, "job_stage", j.Stage)
		return j, false, nil
	default:
		// A message for a stage the job has not reached: only a replay with a
		// wrong stage can do this. Nothing to do, and retrying cannot help.
		b.Log.WarnContext(ctx, "message for a stage the job has not reached; ignored", "job_id", j.ID, "stage", stage, "job_stage", j.Stage)
		return j, false, nil
	}
}

// finish persists a stage's result and advances the job, then enqueues the
// next stage. Persist happens first (DESIGN: "work done by a completed stage
// is persisted before the next stage is enqueued").
func (b *Base) finish(ctx context.Context, j job.Job, stage job.Stage, attempt int, w store.JobWrite) error {
	err := b.Jobs.Advance(ctx, j.ID, stage, attempt, job.StatusInProgress, w)
	if err != nil {
		// ErrConflict: a concurrent duplicate advanced it first; its enqueue
		// (or the retry of ours) carries the job on.
		return fmt.Errorf("advance %s past %s: %w", j.ID, stage, err)
	}
	if next := stage.Next(); next != job.StageDone {
		return b.enqueue(ctx, j.ID, next)
	}
	return nil
}

func (b *Base) enqueue(ctx context.Context, id job.ID, stage job.Stage) error {
	if err := b.Queue.Enqueue(ctx, job.Message{JobID: id, Stage: stage}); err != nil {
		return fmt.Errorf("enqueue %s for %s: %w", stage, id, err)
	}
	return nil
}
