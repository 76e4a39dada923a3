package stage_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
)

// A job's own stage message dead-lettered is told to the DeadLettered
// hook before the job is recorded dead-lettered (the wiring announces
// the version, not reviewed, to the channels other than email); a task's
// is not (its failure is not the job's); a hook that fails keeps the
// message, retried, with nothing dead-lettered.
// Rules: R-CHANNEL-4.
func TestRunner_DeadLetteredHook_JobsOwnMessagesOnly(t *testing.T) {
	var told []job.ID
	var f *failures
	hook := stage.WithDeadLettered(func(_ context.Context, m job.Message) error {
		if f.last == job.StatusDeadLettered {
			t.Error("the hook ran after the job was recorded dead-lettered")
		}
		told = append(told, m.JobID)
		return nil
	})
	q, log := &sqsSim{}, &bytes.Buffer{}
	f = &failures{}
	fn, _ := script(retry.Permanent(retry.SchemaInvalid, errors.New("bad diff (test)")), retry.Permanent(retry.SchemaInvalid, errors.New("bad (test)")))
	q.add(body(t, job.Message{JobID: "j_own", Stage: job.StageNotify}))
	q.add(body(t, job.Message{JobID: "j_task", Stage: job.StageNotify, Task: job.TaskPost, Delivery: "msg_x"}))
	q.drain(t, newRunner(fn, q, f, log, hook), 10)
	if len(told) != 1 || told[0] != "j_own" || len(q.dlq) != 2 {
		t.Fatalf("hook told %v, %d dead letters; want j_own only, 2", told, len(q.dlq))
	}

	q, f = &sqsSim{}, &failures{}
	calls := 0
	failing := stage.WithDeadLettered(func(context.Context, job.Message) error {
		calls++
		if calls == 1 {
			return errors.New("enqueue failed (test)")
		}
		if len(q.dlq) != 0 || f.last == job.StatusDeadLettered {
			t.Errorf("after a failed hook: %d dead letters, status %s; want the message kept", len(q.dlq), f.last)
		}
		return nil
	})
	fn, _ = script(retry.Permanent(retry.SchemaInvalid, errors.New("bad diff (test)")), retry.Permanent(retry.SchemaInvalid, errors.New("bad diff (test)")))
	q.add(body(t, job.Message{JobID: "j_own", Stage: job.StageNotify}))
	q.drain(t, newRunner(fn, q, f, log, failing), 10)
	if calls != 2 || len(q.dlq) != 1 {
		t.Fatalf("hook called %d times, %d dead letters; want 2, 1", calls, len(q.dlq))
	}
}
