// Package sweeper is the scheduled safety net (EventBridge, every few
// minutes). It finds work that fell between the cracks and hands it back to
// the stage that owns it; it never sends mail itself:
//
//   - jobs accepted or in progress whose stage has not moved for StuckAfter
//     (a crash between persist and enqueue, a lost message): the job's
//     current stage is enqueued again; stages are idempotent;
//   - delivery rows stuck in `sending` past their lease: notify is enqueued
//     for the job, and notify reconciles each row from provider evidence
//     before any resend (seed 000 §6.4, §8.2);
//   - rows marked sent without provider evidence after EvidenceWindow: the
//     ordering contract may have been violated; the row moves to
//     `reconciling` (never sent again automatically) and the
//     OrderingViolations metric alerts (seed 000 §8.3).
package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
)

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Sweeper holds the thresholds and adapters.
type Sweeper struct {
	Jobs       *store.Jobs
	Deliveries *store.Deliveries
	Queue      Enqueuer
	Log        *slog.Logger
	Now        func() time.Time
	// StuckAfter: a non-terminal job whose updated_at is older is re-enqueued.
	// It must exceed the longest backoff (5 min, seed 001 §8.2).
	StuckAfter time.Duration
	// EvidenceWindow: a sent row with no provider event after this long is
	// an ordering-contract suspect.
	EvidenceWindow time.Duration
}

// Report counts what a sweep did.
type Report struct {
	JobsRequeued       int `json:"jobs_requeued"`
	StuckSending       int `json:"stuck_sending"`
	OrderingViolations int `json:"ordering_violations"`
}

// Run performs one sweep.
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	var rep Report
	now := s.Now().UTC()
	requeued := map[job.ID]bool{}
	err := s.Jobs.ScanJobs(ctx, expression.Name("status").In(
		expression.Value(string(job.StatusAccepted)), expression.Value(string(job.StatusInProgress)), expression.Value(string(job.StatusRetryableFailed))).
		And(expression.Name("updated_at").LessThan(expression.Value(store.Timestamp(now.Add(-s.StuckAfter))))),
		func(j job.Job) error {
			if j.Stage == job.StageDone || !j.Stage.Valid() {
				return nil
			}
			s.Log.WarnContext(ctx, "stuck job re-enqueued", "job_id", j.ID, "stage", j.Stage, "status", j.Status, "updated_at", j.UpdatedAt)
			requeued[j.ID] = true
			rep.JobsRequeued++
			return s.Queue.Enqueue(ctx, job.Message{JobID: j.ID, Stage: j.Stage})
		})
	if err != nil {
		return rep, fmt.Errorf("sweep jobs: %w", err)
	}
	err = s.Deliveries.Scan(ctx, expression.Name("status").Equal(expression.Value(string(delivery.StatusSending))).
		And(expression.Name("lease_until").LessThan(expression.Value(store.Timestamp(now)))),
		func(r delivery.Row) error {
			rep.StuckSending++
			if requeued[r.JobID] {
				return nil
			}
			requeued[r.JobID] = true
			s.Log.WarnContext(ctx, "delivery stuck in sending; notify will reconcile it", "delivery_id", r.ID, "job_id", r.JobID)
			return s.Queue.Enqueue(ctx, job.Message{JobID: r.JobID, Stage: job.StageNotify})
		})
	if err != nil {
		return rep, fmt.Errorf("sweep sending rows: %w", err)
	}
	err = s.Deliveries.Scan(ctx, expression.Name("status").Equal(expression.Value(string(delivery.StatusSent))).
		And(expression.Name("notified_at").LessThan(expression.Value(store.Timestamp(now.Add(-s.EvidenceWindow))))).
		And(expression.AttributeNotExists(expression.Name("evidence_send_at"))).
		And(expression.AttributeNotExists(expression.Name("evidence_delivery_at"))),
		func(r delivery.Row) error {
			if _, err := s.Deliveries.MarkReconciling(ctx, r.ID); err != nil {
				s.Log.InfoContext(ctx, "row changed before reconciliation; skipped", "delivery_id", r.ID, "error", err)
				return nil
			}
			rep.OrderingViolations++
			s.Log.ErrorContext(ctx, "row marked sent without provider evidence; moved to reconciling, no further sends",
				"delivery_id", r.ID, "job_id", r.JobID, "notified_at", r.NotifiedAt)
			return nil
		})
	if err != nil {
		return rep, fmt.Errorf("sweep sent rows: %w", err)
	}
	obs.Metric(ctx, s.Log, map[string]string{"Function": "sweeper"}, map[string]float64{
		"JobsRequeued": float64(rep.JobsRequeued), "StuckSending": float64(rep.StuckSending), "OrderingViolations": float64(rep.OrderingViolations)})
	return rep, nil
}
