package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// createAt creates a job of changelist cl at stage and status, as a
// stage (or an operator) left it.
func createAt(t *testing.T, s store.Jobs, cl string, stage job.Stage, status job.Status) job.Job {
	t.Helper()
	j := NewJob(cl, 1)
	j.Stage, j.Status = stage, status
	if got := Create(t, s, j, "k-"+cl, "b-"+cl); got.Outcome != store.Created {
		t.Fatalf("create %s: %v", cl, got.Outcome)
	}
	return j
}

// wantJob fails the test unless the job is at stage and status.
func wantJob(t *testing.T, s store.Jobs, id job.ID, stage job.Stage, status job.Status, what string) job.Job {
	t.Helper()
	got, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got.Stage != stage || got.Status != status {
		t.Fatalf("%s: the job is at %s, %s; want %s, %s", what, got.Stage, got.Status, stage, status)
	}
	return got
}

// conflict fails the test unless err is store.ErrConflict.
func conflict(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: %v, want ErrConflict (the condition refuses)", what, err)
	}
}

// stageFence runs the cases of the stages' fenced writes; each on a
// table of its own.
func stageFence(t *testing.T, open JobsOpener) {
	fence := func(t *testing.T) store.Jobs { return open(t, nil) }
	ctx := context.Background()

	// A stage's result lands only while the job is at that stage: a
	// second worker that finished the same stage, or one whose message is
	// for a stage the job has not reached, writes nothing.
	// (R-STAGE-7; the condition dynamo.Jobs.Advance names "stage = from".)
	t.Run("Advance_RefusedOnceTheJobMovedOn", func(t *testing.T) {
		s := fence(t)
		j := createAt(t, s, "cl-advance", job.StageFetch, job.StatusAccepted)
		conflict(t, s.Advance(ctx, j.ID, job.StageLLM, 1, job.StatusInProgress, store.JobWrite{}), "advance from llm of a job at fetch")
		wantJob(t, s, j.ID, job.StageFetch, job.StatusAccepted, "after the refused advance")
		if err := s.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{Diff: &store.StoredDiff{Ref: "first"}}); err != nil {
			t.Fatal(err)
		}
		conflict(t, s.Advance(ctx, j.ID, job.StageFetch, 2, job.StatusInProgress, store.JobWrite{Diff: &store.StoredDiff{Ref: "second"}}),
			"a second advance from fetch")
		got := wantJob(t, s, j.ID, job.StageLLM, job.StatusInProgress, "after the second worker's advance")
		if got.DiffRef != "first" || got.Attempts[job.StageFetch] != 1 {
			t.Fatalf("the second worker's result landed: diff_ref %q, attempts %v", got.DiffRef, got.Attempts)
		}
		conflict(t, s.Advance(ctx, "j_missing", job.StageFetch, 1, job.StatusInProgress, store.JobWrite{}), "advance of no job")
		if _, err := s.Get(ctx, "j_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused advance created a job: %v", err)
		}
	})

	// A stage's status write lands only at its stage, and never on a job
	// in a final status (job.Status.Final): one decided from a read made
	// before the job succeeded or its stage was dead-lettered would
	// revive it without an operator. A no_recipients review is restarted
	// by its own stage, and notify moves a job it holds needs_intervention.
	t.Run("SetStatus_RefusedAtAnotherStageOrOnAFinalStatus", func(t *testing.T) {
		s := fence(t)
		j := createAt(t, s, "cl-status", job.StageFetch, job.StatusInProgress)
		conflict(t, s.SetStatus(ctx, j.ID, job.StageLLM, job.StatusNoRecipients, store.JobWrite{}), "status at llm of a job at fetch")
		wantJob(t, s, j.ID, job.StageFetch, job.StatusInProgress, "after the refused status")

		dead := createAt(t, s, "cl-dead", job.StageLLM, job.StatusDeadLettered)
		conflict(t, s.SetStatus(ctx, dead.ID, job.StageLLM, job.StatusInProgress, store.JobWrite{}), "restart of a dead-lettered llm stage")
		wantJob(t, s, dead.ID, job.StageLLM, job.StatusDeadLettered, "after the refused restart")
		deadNotify := createAt(t, s, "cl-dead-notify", job.StageNotify, job.StatusDeadLettered)
		conflict(t, s.SetStatus(ctx, deadNotify.ID, job.StageNotify, job.StatusNeedsIntervention, store.JobWrite{}), "hold of a dead-lettered notify stage")
		wantJob(t, s, deadNotify.ID, job.StageNotify, job.StatusDeadLettered, "after the refused hold")
		done := createAt(t, s, "cl-done", job.StageDone, job.StatusSucceeded)
		conflict(t, s.SetStatus(ctx, done.ID, job.StageDone, job.StatusInProgress, store.JobWrite{}), "status of a succeeded job")
		wantJob(t, s, done.ID, job.StageDone, job.StatusSucceeded, "after the refused status")

		none := createAt(t, s, "cl-none", job.StageLLM, job.StatusNoRecipients)
		if err := s.SetStatus(ctx, none.ID, job.StageLLM, job.StatusInProgress, store.JobWrite{}); err != nil {
			t.Fatalf("restart of a no_recipients review: %v", err)
		}
		wantJob(t, s, none.ID, job.StageLLM, job.StatusInProgress, "after the restart")
		held := createAt(t, s, "cl-held", job.StageNotify, job.StatusNeedsIntervention)
		if err := s.SetStatus(ctx, held.ID, job.StageNotify, job.StatusInProgress, store.JobWrite{}); err != nil {
			t.Fatalf("notify's status over its own hold: %v", err)
		}
		wantJob(t, s, held.ID, job.StageNotify, job.StatusInProgress, "after notify's status")
		conflict(t, s.SetStatus(ctx, "j_missing", job.StageLLM, job.StatusInProgress, store.JobWrite{}), "status of no job")
	})

	// Notify's verdict lands only while the job is at notify, under the
	// revision of added reviewers notify read (R-OUTBOX-8, R-REVIEWERS-1).
	t.Run("FinishNotify_RefusedAwayFromNotifyOrUnderAnotherRevision", func(t *testing.T) {
		s := fence(t)
		j := createAt(t, s, "cl-verdict", job.StageLLM, job.StatusInProgress)
		conflict(t, s.FinishNotify(ctx, j.ID, 1, job.StatusSucceeded, 0), "a verdict on a job at llm")
		wantJob(t, s, j.ID, job.StageLLM, job.StatusInProgress, "after the refused verdict")
		n := createAt(t, s, "cl-verdict-notify", job.StageNotify, job.StatusInProgress)
		conflict(t, s.FinishNotify(ctx, n.ID, 1, job.StatusSucceeded, 1), "a verdict on a revision nobody added")
		if _, err := s.AddReviewers(ctx, n.ID, []string{"b@example.com"}, nil); err != nil {
			t.Fatal(err)
		}
		conflict(t, s.FinishNotify(ctx, n.ID, 1, job.StatusSucceeded, 0), "a verdict read before the addition")
		wantJob(t, s, n.ID, job.StageNotify, job.StatusInProgress, "after the refused verdict")
		if err := s.FinishNotify(ctx, n.ID, 1, job.StatusSucceeded, 1); err != nil {
			t.Fatal(err)
		}
		conflict(t, s.FinishNotify(ctx, n.ID, 2, job.StatusNeedsIntervention, 1), "a second verdict once the job is done")
		wantJob(t, s, n.ID, job.StageDone, job.StatusSucceeded, "after the second verdict")
	})

	// Reviewers are added to a job that exists, never to one that does
	// not (a write that made an item would be a job without a version).
	t.Run("AddReviewers_RefusedWithoutAJob", func(t *testing.T) {
		s := fence(t)
		if _, err := s.AddReviewers(ctx, "j_missing", []string{"b@example.com"}, nil); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("reviewers added to no job: %v, want ErrConflict", err)
		}
		if _, err := s.Get(ctx, "j_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused addition created a job: %v", err)
		}
	})

	// A version's source reference is the first delivery's: a second
	// delivery of the same webhook writes nothing over it (R-SOURCE-5).
	t.Run("PutSourceRef_TheFirstStays", func(t *testing.T) {
		s := fence(t)
		id := job.NewID("gerrit", "p~ref", 1)
		first := store.SourceRef{Source: "gerrit", Repo: "p", Number: 1, Patchset: 1, HeadSHA: "1111111111111111111111111111111111111111"}
		second := first
		second.HeadSHA = "2222222222222222222222222222222222222222"
		for _, ref := range []store.SourceRef{first, second} {
			if err := s.PutSourceRef(ctx, id, ref); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.GetSourceRef(ctx, id); err != nil || got.HeadSHA != first.HeadSHA {
			t.Fatalf("source reference %+v %v, want the first's head %s", got, err, first.HeadSHA)
		}
	})

	// A stage's failure is recorded on a job that exists and did not
	// succeed (R-STAGE-4); a retryable one leaves a job held for a person
	// as it is; the stage's first failure time is kept across attempts.
	t.Run("RecordFailure_NeverOnASucceededJob_AHoldKept", func(t *testing.T) {
		s := open(t, nil)
		at := time.Now().UTC().Truncate(time.Millisecond)
		fail := func(stage job.Stage, attempt int, when time.Time) job.Failure {
			return job.Failure{Stage: stage, ErrorClass: "UPSTREAM_5XX", Attempt: attempt, At: when}
		}
		done := createAt(t, s, "cl-fail-done", job.StageDone, job.StatusSucceeded)
		_, err := s.RecordFailure(ctx, done.ID, fail(job.StageNotify, 1, at), job.StatusDeadLettered)
		conflict(t, err, "a failure recorded on a succeeded job")
		wantJob(t, s, done.ID, job.StageDone, job.StatusSucceeded, "after the refused failure")
		_, err = s.RecordFailure(ctx, "j_missing", fail(job.StageFetch, 1, at), job.StatusRetryableFailed)
		conflict(t, err, "a failure recorded on no job")
		if _, err := s.Get(ctx, "j_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused failure created a job: %v", err)
		}
		held := createAt(t, s, "cl-fail-held", job.StageNotify, job.StatusNeedsIntervention)
		if _, err := s.RecordFailure(ctx, held.ID, fail(job.StageNotify, 2, at), job.StatusRetryableFailed); err != nil {
			t.Fatalf("a retryable failure on a held job: %v", err)
		}
		if got := wantJob(t, s, held.ID, job.StageNotify, job.StatusNeedsIntervention, "after a retryable failure"); got.LastError == nil || got.Attempts[job.StageNotify] != 2 {
			t.Fatalf("the failure was not recorded: %+v", got.LastError)
		}
		if _, err := s.RecordFailure(ctx, held.ID, fail(job.StageNotify, 5, at), job.StatusDeadLettered); err != nil {
			t.Fatal(err)
		}
		wantJob(t, s, held.ID, job.StageNotify, job.StatusDeadLettered, "after the last attempt")
		run := createAt(t, s, "cl-fail-run", job.StageLLM, job.StatusInProgress)
		first, err := s.RecordFailure(ctx, run.ID, fail(job.StageLLM, 1, at), job.StatusRetryableFailed)
		if err != nil || !first.Equal(at) {
			t.Fatalf("first failure: %v %v, want %v", first, err, at)
		}
		if first, err = s.RecordFailure(ctx, run.ID, fail(job.StageLLM, 2, at.Add(time.Minute)), job.StatusRetryableFailed); err != nil || !first.Equal(at) {
			t.Fatalf("second failure: first failure at %v %v, want the first's %v", first, err, at)
		}
		wantJob(t, s, run.ID, job.StageLLM, job.StatusRetryableFailed, "after two failures")
	})

	// The operator's replay restarts a dead-lettered job, and only one
	// (R-STAGE-5).
	t.Run("Restart_OnlyADeadLetteredJob", func(t *testing.T) {
		s := open(t, nil)
		run := createAt(t, s, "cl-restart-run", job.StageLLM, job.StatusRetryableFailed)
		conflict(t, s.Restart(ctx, run.ID, job.StageLLM, false), "restart of a job that was not dead-lettered")
		wantJob(t, s, run.ID, job.StageLLM, job.StatusRetryableFailed, "after the refused restart")
		conflict(t, s.Restart(ctx, "j_missing", job.StageFetch, false), "restart of no job")
		dead := createAt(t, s, "cl-restart-dead", job.StageLLM, job.StatusDeadLettered)
		if err := s.Restart(ctx, dead.ID, job.StageLLM, false); err != nil {
			t.Fatal(err)
		}
		wantJob(t, s, dead.ID, job.StageLLM, job.StatusInProgress, "after the restart")
		conflict(t, s.Restart(ctx, dead.ID, job.StageFetch, true), "a second restart")
	})

	// Reopen and Intervene leave a dead-lettered job to the operator's
	// replay; Reopen takes back a finished job, Intervene holds one that
	// succeeded. Neither touches a job before notify.
	t.Run("Reopen_Intervene_RefusedOnADeadLetteredJob", func(t *testing.T) {
		s := fence(t)
		for _, st := range []job.Stage{job.StageNotify, job.StageDone} {
			dead := createAt(t, s, fmt.Sprintf("cl-dead-%s", st), st, job.StatusDeadLettered)
			conflict(t, s.Reopen(ctx, dead.ID), fmt.Sprintf("reopen of a job dead-lettered at %s", st))
			conflict(t, s.Intervene(ctx, dead.ID), fmt.Sprintf("intervene on a job dead-lettered at %s", st))
			wantJob(t, s, dead.ID, st, job.StatusDeadLettered, "after the refused reopen and intervene")
		}
		early := createAt(t, s, "cl-early", job.StageLLM, job.StatusNeedsIntervention)
		conflict(t, s.Reopen(ctx, early.ID), "reopen of a job before notify")
		done := createAt(t, s, "cl-finished", job.StageDone, job.StatusSucceeded)
		if err := s.Intervene(ctx, done.ID); err != nil {
			t.Fatalf("intervene on a succeeded job: %v", err)
		}
		wantJob(t, s, done.ID, job.StageDone, job.StatusNeedsIntervention, "after intervene")
		if err := s.Reopen(ctx, done.ID); err != nil {
			t.Fatalf("reopen of a finished job: %v", err)
		}
		wantJob(t, s, done.ID, job.StageNotify, job.StatusInProgress, "after reopen")
	})
}
