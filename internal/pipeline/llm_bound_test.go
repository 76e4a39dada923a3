package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// floodCritic answers with far more findings, and bytes, than a job item
// holds: a critic that keeps no bounds of its own.
type floodCritic struct{}

func (floodCritic) Review(context.Context, critic.Input) (critic.Critique, error) {
	c := critic.Critique{Critic: "fake/flood", Summary: "Flooded.", Findings: []critic.Finding{}, Ledger: &critic.Ledger{Fingerprint: "f"}}
	for i := range 5000 {
		file := fmt.Sprintf("f%03d.go", i/50)
		c.Findings = append(c.Findings, critic.Finding{File: file, Line: i + 1, Severity: critic.SeverityWarning, Rule: "r",
			Message: strings.Repeat("long words ", 200)})
		if i%50 == 0 {
			c.Ledger.Files = append(c.Ledger.Files, critic.LedgerFile{Path: file, SHA256: "h"})
		}
	}
	return c, nil
}

// Whatever a critic returns, the llm stage stores a bounded critique: at
// most 20 findings on a file, 100 in all, MaxCritiqueBytes of JSON, the
// rest counted and said at the end of the summary, and no file that lost
// a finding left in the ledger.
// Rules: R-BOUND-1, R-BOUND-2.
func TestLLM_StoresABoundedCritique(t *testing.T) {
	ctx := context.Background()
	jobs := memstore.NewJobs(func() time.Time { return time.Now().UTC() })
	j := storetest.NewJob("flood", 1)
	j.Status, j.Stage = job.StatusInProgress, job.StageLLM
	jobs.Put(j)
	r := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneBlob("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), Queue: nopQueue{},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now}, Critic: floodCritic{}}
	if err := r.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
		t.Fatal(err)
	}
	got, err := jobs.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var c critic.Critique
	if err := json.Unmarshal(got.Critique, &c); err != nil {
		t.Fatal(err)
	}
	if len(got.Critique) > critic.MaxCritiqueBytes || len(c.Findings) > critic.MaxFindingsTotal || c.NotShown != 5000-len(c.Findings) {
		t.Fatalf("stored %d bytes, %d findings, %d not shown; want at most %d bytes and %d findings, the rest counted",
			len(got.Critique), len(c.Findings), c.NotShown, critic.MaxCritiqueBytes, critic.MaxFindingsTotal)
	}
	if want := fmt.Sprintf("Flooded. %d more findings not shown.", c.NotShown); c.Summary != want || !c.Truncated {
		t.Errorf("summary %q, truncated %v; want %q", c.Summary, c.Truncated, want)
	}
	if len(c.Ledger.Files) != 0 {
		t.Errorf("ledger %+v: every file lost findings, none may count as reviewed", c.Ledger.Files)
	}
}
