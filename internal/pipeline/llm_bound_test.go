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

// The llm stage stores with each finding on a line the diff's code at it
// (the flagged line and the lines around it), taken from the diff it
// reviewed, so notify shows it without reading the diff; a whole-file
// finding has none. A rerun's findings get this version's code, not the
// code stored with the review it builds on.
// Rules: R-MAIL-5.
func TestLLM_StoresTheCodeAtEachFinding(t *testing.T) {
	ctx := context.Background()
	jobs := memstore.NewJobs(func() time.Time { return time.Now().UTC() })
	text := "diff --git a/a.go b/a.go\nnew file mode 100644\n--- /dev/null\n+++ b/a.go\n@@ -0,0 +1,6 @@\n" +
		"+package a\n+\n+import \"fmt\"\n+\n+func Total(sum int) { fmt.Println(\"<script>\", sum) }\n+\n"
	r := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneBlob(text), Queue: nopQueue{},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now}, Critic: critic.NewIncremental(critic.NewOffline()), LookBack: pipeline.DefaultLookBack}
	stored := func(v int) critic.Critique {
		t.Helper()
		j := storetest.NewJob("code", v)
		j.Status, j.Stage = job.StatusInProgress, job.StageLLM
		jobs.Put(j)
		if err := r.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
			t.Fatal(err)
		}
		got, _ := jobs.Get(ctx, j.ID)
		var c critic.Critique
		if err := json.Unmarshal(got.Critique, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := stored(1)
	var debug, whole *critic.Finding
	for i, f := range c.Findings {
		switch {
		case f.Rule == "debug-print":
			debug = &c.Findings[i]
		case f.Line == 0:
			whole = &c.Findings[i]
		}
	}
	if debug == nil {
		t.Fatalf("no debug-print finding: %+v", c.Findings)
	}
	want := critic.Excerpt{Lines: "+import \"fmt\"\n+\n+func Total(sum int) { fmt.Println(\"<script>\", sum) }\n+", At: 3}
	if debug.Excerpt != want {
		t.Errorf("stored excerpt %+v, want %+v", debug.Excerpt, want)
	}
	if whole != nil && whole.Excerpt != (critic.Excerpt{}) {
		t.Errorf("a whole-file finding has code: %+v", whole.Excerpt)
	}
	// The next version's review carries the finding over from v1, whose
	// stored code is replaced by this diff's.
	v1, _ := jobs.Get(ctx, job.NewID("generic", "code", 1))
	c.Findings[0].Excerpt = critic.Excerpt{Lines: "+stale", At: 1}
	v1.Critique, _ = json.Marshal(c)
	jobs.Put(v1)
	if again := stored(2); again.Changes == nil || again.Findings[0].Excerpt.Lines == "+stale" {
		t.Errorf("v2 (changes %v) keeps v1's stored code: %+v", again.Changes, again.Findings[0].Excerpt)
	}
}
