package pipeline

import (
	"context"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// announce sends the notify queue the task that posts job id's version in
// phase to every channel other than email (R-CHANNEL-4): the notify
// function, which knows the channels and holds their credentials, creates
// a post row per channel and sends each on its own message. It is sent
// before the write that makes the phase true, so a failure here is the
// stage's and is retried; a duplicate finds its rows made.
func (b *Base) announce(ctx context.Context, id job.ID, phase channel.Phase) error {
	if !b.Posts {
		return nil
	}
	return b.Queue.Enqueue(ctx, job.Message{JobID: id, Stage: job.StageNotify, Task: job.TaskPost, Phase: string(phase)})
}

// placed ends the fetch stage's work on a version: one it will review is
// announced Started on the channels other than email (a check run in
// progress), then the job moves on.
func (f *Fetch) placed(ctx context.Context, j job.Job, attempt int, w store.JobWrite) error {
	if w.Skipped == "" {
		if err := f.announce(ctx, j.ID, channel.Started); err != nil {
			return err
		}
	}
	return f.finish(ctx, j, job.StageFetch, attempt, w)
}
