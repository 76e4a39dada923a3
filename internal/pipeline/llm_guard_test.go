package pipeline_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// countingCritic counts the model runs it was asked for.
type countingCritic struct {
	mu sync.Mutex
	n  int
}

func (c *countingCritic) Review(context.Context, critic.Input) (critic.Critique, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return critic.Critique{Critic: "fake/1", Summary: "s", Findings: []critic.Finding{}}, nil
}

// recordingQueue keeps what was enqueued.
type recordingQueue struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *recordingQueue) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

func (q *recordingQueue) count(id job.ID) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, m := range q.msgs {
		if m.JobID == id {
			n++
		}
	}
	return n
}

func guarded(t *testing.T, perCL, perAuthor int) (*pipeline.LLM, *memstore.Jobs, *countingCritic, *recordingQueue, *bytes.Buffer) {
	t.Helper()
	jobs := memstore.NewJobs(nil)
	crit := &countingCritic{}
	q := &recordingQueue{}
	var logs bytes.Buffer
	l := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneBlob("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), Queue: q,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: time.Now}, Critic: crit,
		Guard: &pipeline.ModelGuard{Budgets: memstore.NewBudgets(), PerChangelistHour: perCL, PerAuthorDay: perAuthor}}
	return l, jobs, crit, q, &logs
}

// Pushes past a changelist's hourly budget run no model: the job ends
// budget_exceeded with its reason, nothing goes on to notify, nothing is
// dead-lettered, and the refusal is counted. A retry of a job that ran
// (its message redelivered) spends nothing more. Another changelist of
// the same author is stopped by the author's daily budget.
// Rules: R-BUDGET-1.
func TestLLM_BudgetsRefusePastTheLimit_RetrySpendsOnce(t *testing.T) {
	ctx := context.Background()
	l, jobs, crit, q, logs := guarded(t, 2, 3)
	put := func(cl string, v int) job.Job {
		j := storetest.NewJob(cl, v)
		j.Stage, j.Status, j.Author = job.StageLLM, job.StatusInProgress, "mallory"
		jobs.Put(j)
		return j
	}
	run := func(j job.Job, attempt int) job.Job {
		t.Helper()
		if err := l.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, attempt); err != nil {
			t.Fatal(err)
		}
		got, err := jobs.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	v1 := put("push", 1)
	run(v1, 1)
	// A retry of v1 at the llm stage (its persist was lost): moved back.
	jobs.Put(v1)
	run(v1, 2)
	v2 := run(put("push", 2), 1)
	if v2.Status != job.StatusInProgress || v2.Stage != job.StageNotify {
		t.Fatalf("v2: %s at %s; v1's retry spent the budget twice", v2.Status, v2.Stage)
	}
	v3 := run(put("push", 3), 1)
	if v3.Status != job.StatusBudgetExceeded || !strings.Contains(v3.SkipReason, "changelist's budget of 2") {
		t.Fatalf("v3: %s %q, want budget_exceeded naming the changelist's budget", v3.Status, v3.SkipReason)
	}
	if crit.n != 3 { // v1 twice (its retry reviews again), v2
		t.Fatalf("%d model runs, want 3", crit.n)
	}
	if q.count(v3.ID) != 0 || v3.DeadLetter != nil {
		t.Fatalf("the refused job went on (%d messages) or was dead-lettered (%+v)", q.count(v3.ID), v3.DeadLetter)
	}
	if !strings.Contains(logs.String(), `"BudgetRefusals":1`) || !strings.Contains(logs.String(), `"Budget":"changelist"`) {
		t.Fatalf("refusal not counted: %s", logs.String())
	}
	// The author has spent 2 of 3 (v1, v2): one more changelist runs,
	// the next is refused by the author's budget.
	if o := run(put("other", 1), 1); o.Status != job.StatusInProgress {
		t.Fatalf("other v1: %s", o.Status)
	}
	if o := run(put("third", 1), 1); o.Status != job.StatusBudgetExceeded || !strings.Contains(o.SkipReason, "author's budget of 3") {
		t.Fatalf("third v1: %s %q, want the author's budget spent", o.Status, o.SkipReason)
	}
	// An operator's rerun is not a push.
	rerun := put("push", 4)
	rerun.RerunOf = v2.ID
	jobs.Put(rerun)
	if r := run(rerun, 1); r.Status != job.StatusInProgress {
		t.Fatalf("operator's rerun: %s", r.Status)
	}
}

// A version none of whose reviewers has an address runs no model and
// ends no_recipients, counted; the same job with an address runs.
// Rules: R-BUDGET-2.
func TestLLM_NoRecipientWithAnAddress_NoModelRun(t *testing.T) {
	ctx := context.Background()
	l, jobs, crit, q, logs := guarded(t, 0, 0)
	j := storetest.NewJob("nobody", 1)
	j.Stage, j.Status, j.Recipients = job.StageLLM, job.StatusInProgress, nil
	jobs.Put(j)
	if err := l.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := jobs.Get(ctx, j.ID)
	if crit.n != 0 || got.Status != job.StatusNoRecipients || got.SkipReason == "" || q.count(j.ID) != 0 {
		t.Fatalf("model runs %d, status %s %q, messages %d; want no run, no_recipients", crit.n, got.Status, got.SkipReason, q.count(j.ID))
	}
	if !strings.Contains(logs.String(), `"NoRecipientSkips":1`) {
		t.Fatalf("skip not counted: %s", logs.String())
	}
	if !got.Status.Terminal() {
		t.Fatal("no_recipients is not terminal: the sweeper would pick it up")
	}
	k := storetest.NewJob("somebody", 1)
	k.Stage, k.Status = job.StageLLM, job.StatusInProgress
	jobs.Put(k)
	if err := l.Handle(ctx, job.Message{JobID: k.ID, Stage: job.StageLLM}, 1); err != nil || crit.n != 1 {
		t.Fatalf("a job with an address: %v, %d runs", err, crit.n)
	}
}
