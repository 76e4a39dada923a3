package explore

import (
	"context"
	"fmt"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// quietStore is what the quiet rules (R-QUIET-1..3) read and record in the
// jobs table, behind gates: the changelist head and the diff's versions.
type quietStore struct {
	w *world
	s *memstore.Jobs
}

func (q quietStore) LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error) {
	return call2(q.w, ctx, rd("heads.LatestVersion", job.ChangelistKey(source, changelistID)), func() (int, job.ID, error) {
		return q.s.LatestVersion(ctx, source, changelistID)
	})
}

func (q quietStore) SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error) {
	return call(q.w, ctx, wr("diffs.SameDiff", changelistKey+"#"+diffSHA), func() ([]int, error) {
		return q.s.SameDiff(ctx, changelistKey, diffSHA, version)
	})
}

// quietSafety: a row settled quietly (superseded, the same diff, nothing
// new) is never sent, whatever happened to it before or after.
func (w *world) quietSafety(emails map[string]int) *Violation {
	ctx := context.Background()
	for _, id := range w.rowIDs {
		r, err := w.outbox.Get(ctx, id)
		if err == nil && r.Status.Quiet() && emails[id] > 0 {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("row %s is %s (%s) and was sent %d times", id, r.Status, r.SkipReason, emails[id])}
		}
	}
	return nil
}

// quietLiveness: once the world is quiet, the changelist's latest version
// is mailed to its recipients (its rows are never settled quietly), unless
// its job is visibly failed, or was and came back (revived). A row SES
// undid after its Send (a Reject, a permanent bounce: newer-bounced) was
// mailed; what is owed instead is the owed check's (owed.go).
func (w *world) quietLiveness() *Violation {
	ctx := context.Background()
	for _, id := range w.jobIDs {
		j, err := w.jobsMem.Get(ctx, id)
		if err != nil || w.revived(j) {
			continue
		}
		latest, _, err := w.jobsMem.LatestVersion(ctx, j.Source, j.ChangelistID)
		if err != nil || latest != j.ReviewVersion {
			continue
		}
		for _, r := range w.rowsOf(j) {
			if r.Undone() && !r.NotifiedAt.IsZero() {
				continue
			}
			if r.Status.Quiet() || (r.Status != delivery.StatusSent && r.Status != delivery.StatusDelivered && j.Status == job.StatusSucceeded) {
				return &Violation{Rule: "quiet", Message: fmt.Sprintf("the latest version's row %s is %s once the world is quiet", r.ID, r.Status)}
			}
		}
	}
	return nil
}

// revived reports whether j was dead-lettered (its envelope is in a DLQ)
// and has run again since: a copy of its message that raced the dead
// letter (the sweeper's re-enqueue of the job it found stuck a moment
// before) or an operator's replay. An older version may have been mailed
// in its stead meanwhile, judged against it dead-lettered (R-QUIET-3);
// the revived version is then mailed too, or settled as the same diff
// that older version mailed (R-QUIET-1) — each version at most once, but
// no longer one version per recipient, nor the latest mailed.
func (w *world) revived(j job.Job) bool {
	return j.Status != job.StatusDeadLettered && w.envelopeFor(j.ID)
}
