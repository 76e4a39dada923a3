package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// BudgetWindow is one budget a model run spends from: at most Limit runs
// per window of length Every, for one Key (a changelist, an author).
type BudgetWindow struct {
	// Name says which budget ("changelist", "author"): it keys the
	// window and names the budget a refusal reports.
	Name  string
	Key   string
	Every time.Duration
	Limit int
}

// Spend asks for one model run of job JobID from every window at once.
// At chooses the windows (the job's creation time: a retry of the job, or
// a redelivery of its message, lands in the same windows whenever it runs).
type Spend struct {
	JobID   job.ID
	At      time.Time
	Windows []BudgetWindow
}

// SpendResult is what a spend decided. OK: the run is counted (or had
// been: the same job spends once). Otherwise Refused names the window
// whose limit was reached and Used how many runs it counted; nothing was
// spent from any window.
type SpendResult struct {
	OK      bool
	Refused string
	Used    int
	Limit   int
}

// Budgets keeps model-run budgets (dynamo.Budgets on DynamoDB,
// memstore.Budgets in memory).
type Budgets interface {
	Spend(ctx context.Context, s Spend) (SpendResult, error)
}

// WindowStart is the start of w's window holding t (windows are aligned
// to the Unix epoch: clock hours, UTC days).
func WindowStart(w BudgetWindow, t time.Time) time.Time { return t.UTC().Truncate(w.Every) }
