package pipeline

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// restartReview starts the review of a version that ended no_recipients
// (R-BUDGET-2) once a reviewer with an address was added to it: the job
// goes back to the llm stage, which runs the model now that someone will
// read its answer.
func (f *Fetch) restartReview(ctx context.Context, j job.Job) error {
	err := f.Jobs.SetStatus(ctx, j.ID, job.StageLLM, job.StatusInProgress, store.JobWrite{ClearSkipReason: true})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	f.Log.InfoContext(ctx, "a reviewer with an address was added; the version is reviewed now", "job_id", j.ID)
	return f.enqueue(ctx, j.ID, job.StageLLM)
}
