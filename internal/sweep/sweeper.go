// Package sweep is the scheduled safety net (EventBridge, every few
// minutes). It finds work that fell between the cracks and hands it back to
// the stage that owns it; it never sends mail itself:
//
//   - jobs accepted or in progress whose stage has not moved for StuckAfter
//     (a crash between persist and enqueue, a lost message): the job's
//     current stage is enqueued again; stages are idempotent;
//   - delivery rows stuck in `sending` past their lease that no notifier is
//     looking at (a send whose answer was lost, then the notify message
//     lost or dead-lettered): notify is enqueued for the job, and notify
//     settles each row from provider evidence before any resend
//     (R-OUTBOX-3, R-OUTBOX-6);
//   - rows marked sent with no provider evidence, once the evidence path
//     has caught up past them (delivery.Evidence.CaughtUp) and
//     EvidenceWindow has passed: the ordering contract may have been
//     violated; the row moves
//     to `reconciling` (never sent again automatically), its job to
//     needs_intervention, and the OrderingViolations metric alerts
//     (R-RECON-1). While the path is behind, silence proves nothing and
//     the row is left alone.
//   - daily digests that are due (R-DIGEST-3): each open one, and each
//     closed but never claimed for StuckAfter, is handed to notify (a
//     digest message, job.TaskDigest), which closes it and sends it
//     through the outbox; a digest claimed since is a row like any other
//     (above).
//
// It reads the store's sparse indexes of live work (StuckJobs, Unsettled,
// DueDigests; R-COST-1), never the tables' history.
//
// Each sweep first checks whether the feedback queue has drained
// (internal/drain): on its schedule the evidence path catches up even
// when no notifier is looking.
//
// Each sweep also reports the gauges behind two alarms: HeldDeliveries
// (rows held for provider evidence past twice the margin, or under
// reconciliation: each needs the evidence path or an operator) and
// EvidenceLag (how long the row that has waited longest on the evidence
// path has waited since its send, in seconds; 0 when none waits). The
// alarm on EvidenceLag is set at the documented bound on that wait
// (docs/operations.md): it breaches for a row the path never settles —
// the path stalled, never drained, or the hold policy waiting for an
// operator (R-RECON-3).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	Jobs       Jobs
	Deliveries Deliveries
	// Evidence is the evidence path of ConfigurationSet; nil: no sent row
	// is ever taken for an ordering violation.
	Evidence         EvidenceReader
	ConfigurationSet string
	// Drain, if set, checks at each sweep whether the feedback queue has
	// drained, moving the evidence path's drain time (drain.Checker).
	Drain DrainChecker
	Queue Enqueuer
	Log   *slog.Logger
	Now   func() time.Time
	// StuckAfter: a non-terminal job whose updated_at is older is re-enqueued.
	// It must exceed the longest backoff (5 min, R-STAGE-2).
	StuckAfter time.Duration
	// EvidenceWindow: a sent row with no provider event after this long is
	// an ordering-contract suspect (if the evidence path caught up past it).
	EvidenceWindow time.Duration
	// Margin is the publish bound the evidence rule assumes
	// (delivery.Evidence.Bound, CRITICIZER_EVIDENCE_MARGIN).
	Margin time.Duration
	// Digests finds the daily digests that are due (store.Digests); nil:
	// none are looked for. DigestClock is the clock they are due by
	// (nil: Now; tests move it alone, as notify's).
	Digests     DigestSource
	DigestClock func() time.Time
	// Posts hands the post rows left unsent back to notify (posting.Posting,
	// R-CHANNEL-5); nil: none are looked for.
	Posts PostSweeper
}

// PostSweeper re-enqueues unsent post rows older than settle.
type PostSweeper interface {
	Sweep(ctx context.Context, now time.Time, settle time.Duration) (int, error)
}

// DigestSource finds the digests that are due (store.Digests).
type DigestSource interface {
	DueDigests(ctx context.Context, dueBy time.Time, fn func(delivery.Row) error) error
}

// Jobs is what the sweeper does with jobs (store.Jobs). A role
// interface because the explorer interposes on these calls, and because
// it says the sweeper never writes a stage's results.
type Jobs interface {
	StuckJobs(ctx context.Context, before time.Time, fn func(job.Job) error) error
	Intervene(ctx context.Context, id job.ID) error
}

// Deliveries is what the sweeper does with delivery rows (store.Deliveries).
type Deliveries interface {
	Unsettled(ctx context.Context, sentBefore time.Time, fn func(delivery.Row) error) error
	MarkReconciling(ctx context.Context, id string) (delivery.Row, error)
}

// EvidenceReader reads the evidence path's state (store.Evidence).
type EvidenceReader interface {
	State(ctx context.Context, set string) (store.EvidenceState, error)
}

// DrainChecker checks whether the feedback queue has drained
// (drain.Checker).
type DrainChecker interface {
	Check(ctx context.Context) (bool, error)
}

// Report counts what a sweep did.
type Report struct {
	JobsRequeued       int `json:"jobs_requeued"`
	StuckSending       int `json:"stuck_sending"`
	OrderingViolations int `json:"ordering_violations"`
	// HeldDeliveries and EvidenceLagSeconds are the gauges (see the
	// package comment).
	HeldDeliveries     int     `json:"held_deliveries"`
	EvidenceLagSeconds float64 `json:"evidence_lag_seconds"`
	// DigestsDue counts the digests handed to notify.
	DigestsDue int `json:"digests_due"`
	// PostsRequeued counts the post rows handed back to notify.
	PostsRequeued int `json:"posts_requeued,omitempty"`
}

// Run performs one sweep.
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	var rep Report
	now := s.Now().UTC()
	requeued := map[job.ID]bool{} // by the message's JobID: a job, or a digest's row
	err := s.Jobs.StuckJobs(ctx, now.Add(-s.StuckAfter),
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
	if s.Drain != nil {
		// A failed check only leaves the drain time where it was.
		if _, err := s.Drain.Check(ctx); err != nil {
			s.Log.WarnContext(ctx, "could not check whether the feedback queue drained", "error", err)
		}
	}
	var ev delivery.Evidence
	if s.Evidence != nil {
		st, err := s.Evidence.State(ctx, s.ConfigurationSet)
		if err != nil {
			return rep, fmt.Errorf("sweep: %w", err)
		}
		ev = delivery.Evidence{Newest: st.Newest, Drained: st.Drained, Bound: s.Margin}
	}
	var longest time.Duration // the longest wait on the evidence path
	err = s.Deliveries.Unsettled(ctx, now.Add(-s.EvidenceWindow), func(r delivery.Row) error {
		switch r.Status {
		case delivery.StatusReconciling:
			rep.HeldDeliveries++
		case delivery.StatusSending:
			if !now.After(r.LeaseUntil) {
				return nil // a send in flight
			}
			if r.NotificationID == "" && !r.HasEvidence() {
				longest = max(longest, now.Sub(r.SentBy()))
			}
			if r.Held(now, s.Margin) {
				rep.HeldDeliveries++
			}
			if !r.EvidenceCheckedAt.IsZero() && now.Sub(r.EvidenceCheckedAt) < s.StuckAfter {
				return nil // a notifier is waiting on it
			}
			rep.StuckSending++
			m := r.NotifyMessage()
			if r.Kind != delivery.KindReply {
				// A job's run (or a digest's) settles all its rows; a
				// reply's confirmation is a task of its own.
				if requeued[m.JobID] {
					return nil
				}
				requeued[m.JobID] = true
			}
			s.Log.WarnContext(ctx, "delivery stuck in sending; notify will settle it", "delivery_id", r.ID, "job_id", r.JobID)
			return s.Queue.Enqueue(ctx, m)
		case delivery.StatusSent:
			return s.unconfirmed(ctx, r, ev, &rep)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("sweep deliveries: %w", err)
	}
	if err := s.dueDigests(ctx, now, requeued, &rep); err != nil {
		return rep, fmt.Errorf("sweep digests: %w", err)
	}
	if s.Posts != nil {
		n, err := s.Posts.Sweep(ctx, now, s.StuckAfter)
		if rep.PostsRequeued = n; err != nil {
			return rep, fmt.Errorf("sweep posts: %w", err)
		}
	}
	// Measured from each row's send, whatever the evidence path's state:
	// a path that never drained was reported as the window it should
	// cover, which never breached the alarm.
	rep.EvidenceLagSeconds = max(0, longest.Seconds())
	obs.Metric(ctx, s.Log, map[string]string{"Function": "sweeper"}, map[string]float64{
		"JobsRequeued": float64(rep.JobsRequeued), "StuckSending": float64(rep.StuckSending), "OrderingViolations": float64(rep.OrderingViolations),
		"HeldDeliveries": float64(rep.HeldDeliveries), "DigestsDue": float64(rep.DigestsDue)})
	obs.Metric(ctx, s.Log, map[string]string{"Function": "sweeper"}, map[string]float64{"EvidenceLag": rep.EvidenceLagSeconds})
	return rep, nil
}

// unconfirmed handles a row marked sent with no provider evidence after
// the evidence window: once the evidence path has caught up past its
// send, every event that could name it has been processed and none did —
// an ordering violation to reconcile. Before that, nothing is known.
func (s *Sweeper) unconfirmed(ctx context.Context, r delivery.Row, ev delivery.Evidence, rep *Report) error {
	if !ev.CaughtUp(r.NotifiedAt) {
		return nil
	}
	if _, err := s.Deliveries.MarkReconciling(ctx, r.ID); err != nil {
		s.Log.InfoContext(ctx, "row changed before reconciliation; skipped", "delivery_id", r.ID, "error", err)
		return nil
	}
	rep.OrderingViolations++
	rep.HeldDeliveries++
	if r.Kind == delivery.KindReply {
		// A reply's confirmation is not its job's email: the row waits
		// for an operator, the job's outcome stands.
		s.Log.ErrorContext(ctx, "reply confirmation marked sent without provider evidence; moved to reconciling, no further sends",
			"delivery_id", r.ID, "job_id", r.JobID, "notified_at", r.NotifiedAt, "drained", ev.Drained)
		return nil
	}
	// A digest has no job: the row itself, held, is what the operator sees
	// (HeldDeliveries, criticizer deliveries).
	if !r.IsDigest() {
		if err := s.Jobs.Intervene(ctx, r.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("mark job %s needs_intervention: %w", r.JobID, err)
		}
	}
	s.Log.ErrorContext(ctx, "row marked sent without provider evidence; moved to reconciling, no further sends",
		"delivery_id", r.ID, "job_id", r.JobID, "notified_at", r.NotifiedAt, "drained", ev.Drained)
	return nil
}

// dueDigests hands notify the digests that are due (R-DIGEST-3): every
// open one at each sweep until notify closes it (a duplicate message
// finds it closed, and the close is one conditional write anyway), and
// one closed but never claimed once it has been left StuckAfter (its
// notify message lost or dead-lettered). A digest claimed since is in
// flight, Unsettled's.
func (s *Sweeper) dueDigests(ctx context.Context, now time.Time, requeued map[job.ID]bool, rep *Report) error {
	if s.Digests == nil {
		return nil
	}
	dueBy := now
	if s.DigestClock != nil {
		dueBy = s.DigestClock().UTC()
	}
	return s.Digests.DueDigests(ctx, dueBy, func(r delivery.Row) error {
		m := r.NotifyMessage()
		if requeued[m.JobID] || (r.Status != delivery.StatusOpen && now.Sub(r.UpdatedAt) < s.StuckAfter) {
			return nil
		}
		requeued[m.JobID] = true
		rep.DigestsDue++
		s.Log.InfoContext(ctx, "digest due; notify will close and send it", "digest_id", r.ID, "status", r.Status, "due_at", r.DueAt)
		return s.Queue.Enqueue(ctx, m)
	})
}
