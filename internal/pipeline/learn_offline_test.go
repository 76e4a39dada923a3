package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/vote"
)

// fixedCritic answers every review with the same findings and keeps the
// Input it was given.
type fixedCritic struct {
	in       critic.Input
	findings []critic.Finding
}

func (f *fixedCritic) Review(_ context.Context, in critic.Input) (critic.Critique, error) {
	f.in = in
	return critic.Critique{Critic: "fake/1", Summary: "s", Findings: slices.Clone(f.findings)}, nil
}

// failingLearnings cannot read a repository's learnings.
type failingLearnings struct{}

func (failingLearnings) Accepted(context.Context, string) ([]string, error) {
	return nil, errors.New("throttled")
}

// The llm stage reads the version's repository's accepted learnings: the
// critic is given their rules, and what it still reports of them is left
// out of the stored critique, errors aside, and counted; another
// repository's review is untouched; a read that fails fails the attempt.
// Rules: R-LEARN-2.
func TestLLM_AcceptedLearningsLeaveTheirRuleOut_ErrorsKept(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	jobs, learn := memstore.NewJobs(func() time.Time { return now }), memstore.NewLearnings()
	const repo = "generic:acme/billing"
	for _, r := range []string{"r_1", "r_2", "r_3"} {
		if _, err := learn.Tally(ctx, vote.Tally{Repository: repo, Rule: "debug-print", Reader: r, Choice: vote.Wrong, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := learn.Decide(ctx, vote.LearningID(repo, "debug-print"), vote.Accepted, now); err != nil {
		t.Fatal(err)
	}
	crit := &fixedCritic{findings: []critic.Finding{
		{File: "a.go", Line: 1, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "m"},
		{File: "a.go", Line: 2, Severity: critic.SeverityError, Rule: "debug-print", Message: "m"},
		{File: "a.go", Line: 3, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "m"},
	}}
	var logs bytes.Buffer
	l := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneBlob("--- a/a.go\n+++ b/a.go\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"), Queue: nopQueue{},
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return now }}, Critic: crit, Learnings: learn}
	review := func(cl, repository string) critic.Critique {
		t.Helper()
		j := storetest.NewJob(cl, 1)
		j.Repository, j.Status, j.Stage = repository, job.StatusInProgress, job.StageLLM
		jobs.Put(j)
		if err := l.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
			t.Fatal(err)
		}
		got, _ := jobs.Get(ctx, j.ID)
		var c critic.Critique
		if err := json.Unmarshal(got.Critique, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := review("learned", "acme/billing")
	if !slices.Equal(crit.in.Unwanted, []string{"debug-print"}) {
		t.Errorf("the critic was given %q, want the accepted rule", crit.in.Unwanted)
	}
	if c.LearnedOut != 1 || len(c.Findings) != 2 || c.Findings[0].Severity != critic.SeverityError || c.Findings[1].Rule != "todo-added" {
		t.Fatalf("stored %+v (%d left out); want the error and the todo, one left out", c.Findings, c.LearnedOut)
	}
	if !strings.Contains(logs.String(), `"FindingsLearnedOut":1`) {
		t.Errorf("FindingsLearnedOut not emitted: %s", logs.String())
	}
	if c := review("elsewhere", "acme/ledger"); c.LearnedOut != 0 || len(c.Findings) != 3 || crit.in.Unwanted != nil {
		t.Fatalf("another repository's review: %+v, given %q", c, crit.in.Unwanted)
	}
	l.Learnings = failingLearnings{}
	j := storetest.NewJob("unread", 1)
	j.Repository, j.Status, j.Stage = "acme/billing", job.StatusInProgress, job.StageLLM
	jobs.Put(j)
	if err := l.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err == nil {
		t.Fatal("a review whose learnings could not be read went on without them")
	}
}
