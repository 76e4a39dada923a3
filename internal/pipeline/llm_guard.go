package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
)

// ModelGuard decides, before the llm stage calls a model, whether the call
// may be made at all: not when nobody would read its answer (R-BUDGET-2),
// and not past the changelist's or the author's budget of model runs
// (R-BUDGET-1). The wiring sets it only for a model critic: the offline
// critic costs nothing.
type ModelGuard struct {
	// Budgets counts the runs (store.Budgets); nil: no budgets.
	Budgets store.Budgets
	// PerChangelistHour and PerAuthorDay are the limits; 0 is off.
	PerChangelistHour int
	PerAuthorDay      int
}

// Budget names, as refusals and the BudgetRefusals metric report them.
const (
	BudgetChangelist = "changelist"
	BudgetAuthor     = "author"
)

// guard ends the job without a model run when it must not have one: it
// returns true when it did (the job is terminal, nothing to retry, nobody
// mailed, nothing dead-lettered). A store failure is returned to be
// retried; the spend is keyed by the job, so a retry spends nothing twice.
func (l *LLM) guard(ctx context.Context, j job.Job, attempt int) (bool, error) {
	g := l.Guard
	if g == nil {
		return false, nil
	}
	if len(j.AllRecipients()) == 0 {
		reason := "no reviewer of this version has an address: the model was not run; a reviewer with an address added to it starts the review"
		obs.Metric(ctx, l.Log, map[string]string{"Source": j.Source}, map[string]float64{"NoRecipientSkips": 1})
		return true, l.skip(ctx, j, attempt, job.StatusNoRecipients, reason)
	}
	if g.Budgets == nil || j.RerunOf != "" {
		// An operator's rerun is a deliberate run, not a push.
		return false, nil
	}
	windows := []store.BudgetWindow{{Name: BudgetChangelist, Key: job.ChangelistKey(j.Source, j.ChangelistID), Every: time.Hour, Limit: g.PerChangelistHour}}
	if j.Author != "" {
		windows = append(windows, store.BudgetWindow{Name: BudgetAuthor, Key: job.ChangelistKey(j.Source, j.Author), Every: 24 * time.Hour, Limit: g.PerAuthorDay})
	}
	at := j.CreatedAt
	if at.IsZero() {
		at = l.Now()
	}
	res, err := g.Budgets.Spend(ctx, store.Spend{JobID: j.ID, At: at, Windows: windows})
	if err != nil {
		return false, fmt.Errorf("job %s: %w", j.ID, err)
	}
	if res.OK {
		return false, nil
	}
	var reason string
	switch res.Refused {
	case BudgetAuthor:
		reason = fmt.Sprintf("the author's budget of %d model runs a day (UTC) is spent: the model was not run and nobody was mailed; a version pushed the next day is reviewed", res.Limit)
	default:
		reason = fmt.Sprintf("the changelist's budget of %d model runs an hour is spent: the model was not run and nobody was mailed; a version pushed after the hour is reviewed, with every change since the last review", res.Limit)
	}
	obs.Metric(ctx, l.Log, map[string]string{"Budget": res.Refused}, map[string]float64{"BudgetRefusals": 1})
	return true, l.skip(ctx, j, attempt, job.StatusBudgetExceeded, reason)
}

// skip ends the job at the llm stage with a terminal status and its
// reason. A conflict means another worker moved the job on: nothing left.
func (l *LLM) skip(ctx context.Context, j job.Job, attempt int, status job.Status, reason string) error {
	if err := l.announce(ctx, j.ID, channel.Finished); err != nil {
		return err // the version is skipped: its channels say so (R-CHANNEL-4)
	}
	err := l.Jobs.SetStatus(ctx, j.ID, job.StageLLM, status, store.JobWrite{SkipReason: reason})
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	l.Log.InfoContext(ctx, "no model run", "job_id", j.ID, "status", status)
	return nil
}
