package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// oneBlob serves the same diff for every reference.
type oneBlob string

func (b oneBlob) Put(context.Context, string, []byte) (string, string, error) { return "", "", nil }
func (b oneBlob) Get(context.Context, string, int64) ([]byte, error)          { return []byte(b), nil }

// recordingCritic keeps the Input it was given and answers with a
// critique that has a ledger.
type recordingCritic struct{ in critic.Input }

func (r *recordingCritic) Review(_ context.Context, in critic.Input) (critic.Critique, error) {
	r.in = in
	return critic.Critique{Critic: "fake/1", Summary: "s", Findings: []critic.Finding{}, Ledger: &critic.Ledger{Fingerprint: "f"},
		Usage: &critic.Usage{InputTokens: 10, OutputTokens: 2}, Changes: &critic.Changes{Since: 1, Reviewed: 2, Carried: 18}}, nil
}

// The llm stage builds a rerun on the last reviewed version: walking back
// over the job ids it passes versions with no job (gaps), a job not
// reviewed yet, a dead-lettered one and a critique without a ledger; it
// looks back at most LookBack versions; an operator's rerun is reviewed
// afresh. What the rerun cost and how many files it sent are emitted.
// Rules: R-COST-3.
func TestReview_FindsThePreviousReview_GapsDeadLetteredBound(t *testing.T) {
	ctx := context.Background()
	jobs := memstore.NewJobs(func() time.Time { return time.Now().UTC() })
	ledgered, _ := json.Marshal(critic.Critique{Critic: "fake/1", Findings: []critic.Finding{}, Ledger: &critic.Ledger{Fingerprint: "f"}})
	plain, _ := json.Marshal(critic.Critique{Critic: "fake/1", Findings: []critic.Finding{}})
	put := func(cl string, v int, status job.Status, stage job.Stage, crit []byte) job.Job {
		j := storetest.NewJob(cl, v)
		j.Status, j.Stage, j.Critique = status, stage, crit
		jobs.Put(j)
		return j
	}
	var logs bytes.Buffer
	crit := &recordingCritic{}
	r := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneBlob("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), Queue: nopQueue{},
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: time.Now}, Critic: crit, LookBack: pipeline.DefaultLookBack}
	review := func(j job.Job) *critic.Previous {
		t.Helper()
		if err := r.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
			t.Fatal(err)
		}
		return crit.in.Previous
	}

	put("walk", 1, job.StatusSucceeded, job.StageDone, ledgered)
	// v2: no job. v3: dead-lettered after its review. v4: not reviewed yet.
	put("walk", 3, job.StatusDeadLettered, job.StageNotify, ledgered)
	put("walk", 4, job.StatusInProgress, job.StageLLM, nil)
	if p := review(put("walk", 5, job.StatusInProgress, job.StageLLM, nil)); p == nil || p.Version != 1 || p.Critique.Ledger == nil {
		t.Fatalf("v5 builds on %+v; want version 1", p)
	}
	if crit.in.Fresh {
		t.Error("a webhook's version was reviewed as an operator's rerun")
	}
	if !strings.Contains(logs.String(), `"FilesReviewed":2`) || !strings.Contains(logs.String(), `"FilesCarried":18`) || !strings.Contains(logs.String(), `"ModelInputTokens":10`) {
		t.Errorf("metrics not emitted: %s", logs.String())
	}

	put("old", 1, job.StatusSucceeded, job.StageDone, plain)
	if p := review(put("old", 2, job.StatusInProgress, job.StageLLM, nil)); p != nil {
		t.Errorf("built on %+v: a critique without a ledger", p)
	}

	put("far", 1, job.StatusSucceeded, job.StageDone, ledgered)
	if p := review(put("far", 21, job.StatusInProgress, job.StageLLM, nil)); p == nil || p.Version != 1 {
		t.Errorf("v21 builds on %+v; want version 1, 20 back", p)
	}
	if p := review(put("far", 22, job.StatusInProgress, job.StageLLM, nil)); p == nil || p.Version != 21 {
		t.Errorf("v22 builds on %+v; want version 21", p)
	}
	put("farther", 1, job.StatusSucceeded, job.StageDone, ledgered)
	if p := review(put("farther", 22, job.StatusInProgress, job.StageLLM, nil)); p != nil {
		t.Errorf("v22 builds on version %d, 21 back; want none", p.Version)
	}

	rerun := put("walk", 6, job.StatusInProgress, job.StageLLM, nil)
	rerun.RerunOf = job.NewID("generic", "walk", 5)
	jobs.Put(rerun)
	if p := review(rerun); p == nil || p.Version != 5 || !crit.in.Fresh {
		t.Errorf("operator's rerun: previous %+v, fresh %v; want version 5, fresh", p, crit.in.Fresh)
	}

	r.LookBack = 0
	if p := review(put("walk", 7, job.StatusInProgress, job.StageLLM, nil)); p != nil {
		t.Errorf("with incremental review off, built on version %d", p.Version)
	}
}
