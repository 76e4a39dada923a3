package stage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
)

// A task's failures (a reviewer refresh) are retried and dead-lettered
// like any message's, with an envelope that names the job and keeps the
// task for a replay; but they are not the job's: nothing is recorded on
// it, so a finished job does not read retryable_failed or dead_lettered
// because a reviewer could not be added.
// Rules: R-REVIEWERS-1, R-STAGE-4.
func TestRunner_TaskFailuresAreNotTheJobs(t *testing.T) {
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	fn, seen := script(upstream5xx(), retry.Permanent(retry.AuthDenied, errors.New("github: 401 (test)")))
	r := newRunner(fn, q, f, log)
	q.add(body(t, job.Message{JobID: "j_task", Stage: job.StageFetch, Task: job.TaskReviewers}))
	q.drain(t, r, 10)
	if len(*seen) != 2 {
		t.Fatalf("the task ran %d times, want 2 (a retry, then a non-retryable failure)", len(*seen))
	}
	if len(f.list) != 0 {
		t.Fatalf("the task's failures were recorded on the job: %+v", f.list)
	}
	if len(q.dlq) != 1 {
		t.Fatalf("%d dead letters, want 1", len(q.dlq))
	}
	env, isEnv, err := deadletter.Decode(q.dlq[0])
	if err != nil || !isEnv || env.JobID != "j_task" || env.ErrorClass != string(retry.AuthDenied) {
		t.Fatalf("envelope %+v (%v)", env, err)
	}
	var m job.Message
	if err := json.Unmarshal([]byte(env.Original.Body), &m); err != nil || m.Task != job.TaskReviewers {
		t.Fatalf("the envelope lost the task: %s (%v)", env.Original.Body, err)
	}

	// The job's own stage work still records its failures.
	q, f = &sqsSim{}, &failures{}
	fn, _ = script(upstream5xx())
	q.add(body(t, job.Message{JobID: "j_stage", Stage: job.StageFetch}))
	q.drain(t, newRunner(fn, q, f, log), 10)
	if len(f.list) != 1 || f.last != job.StatusRetryableFailed {
		t.Fatalf("a stage failure was not recorded: %+v", f.list)
	}
}
