package critic

import (
	"context"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

// A change of the repository's settings is a change of fingerprint, so an
// incremental review carries no finding across it: the model is asked
// again for a diff it reviewed under other settings. Reviews without
// settings keep the fingerprints they had before settings existed.
// Rules: R-REPO-1.
func TestRepositorySettings_ChangeTheFingerprint(t *testing.T) {
	m := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`}}
	llm, err := NewLLM(m)
	if err != nil {
		t.Fatal(err)
	}
	off := NewOffline()
	in := llmInput(goEdit)
	settings := []*job.RepoSettings{
		nil,
		{Ignore: []string{"gen/**"}},
		{Instructions: []job.PathInstruction{{Path: "internal/**", Text: "Check the SQL."}}},
		{Language: "German"},
	}
	seen := map[string]int{}
	for i, s := range settings {
		in.Settings = s
		seen[llm.Fingerprint(in)] = i
	}
	if len(seen) != len(settings) {
		t.Fatalf("LLM fingerprints: %d distinct for %d settings", len(seen), len(settings))
	}
	in.Settings = &job.RepoSettings{MinSeverity: "error"} // applied by notify: not the critic's
	if llm.Fingerprint(in) != llm.Fingerprint(llmInput(goEdit)) {
		t.Fatal("min_severity changed the LLM's fingerprint")
	}
	in.Settings = &job.RepoSettings{Ignore: []string{"gen/**"}}
	if off.Fingerprint(in) == off.Fingerprint(llmInput(goEdit)) {
		t.Fatal("ignore globs did not change the offline fingerprint")
	}
	in.Settings = &job.RepoSettings{Language: "German"}
	if off.Fingerprint(in) != off.Fingerprint(llmInput(goEdit)) {
		t.Fatal("the language changed the offline fingerprint")
	}

	// Incremental: version 4 has version 3's diff under new instructions.
	ic := NewIncremental(llm)
	v3 := llmInput(goEdit)
	c3, err := ic.Review(context.Background(), v3)
	if err != nil {
		t.Fatal(err)
	}
	v4 := llmInput(goEdit)
	v4.ReviewVersion, v4.Previous = 4, &Previous{Version: 3, Critique: c3}
	v4.Settings = &job.RepoSettings{Instructions: []job.PathInstruction{{Path: "internal/**", Text: "Check the SQL."}}}
	if _, err := ic.Review(context.Background(), v4); err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) != 2 || !strings.Contains(m.reqs[1].User, "Check the SQL.") {
		t.Fatalf("model asked %d times; version 4 must be reviewed under its settings", len(m.reqs))
	}
}

// A diff that is all ignored asks no critic, and says so; the settings
// file itself is never ignored.
// Rules: R-REPO-1.
func TestReviewIgnoring_AllIgnoredAndTheSettingsFile(t *testing.T) {
	m := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`}}
	llm, _ := NewLLM(m)
	in := llmInput(goEdit)
	in.Settings = &job.RepoSettings{Ignore: []string{"internal/**"}}
	c, err := ReviewIgnoring(context.Background(), llm, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) != 0 || !strings.Contains(c.Summary, "ignored by .criticizer.yaml") || c.Files != 1 || len(c.Omitted) != 1 {
		t.Fatalf("model %d, critique %+v", len(m.reqs), c)
	}
	settingsEdit := "diff --git a/.criticizer.yaml b/.criticizer.yaml\n--- a/.criticizer.yaml\n+++ b/.criticizer.yaml\n@@ -1 +1 @@\n-ignore: []\n+ignore: [\"**\"]\n"
	in.Diff, in.Settings = settingsEdit, &job.RepoSettings{Ignore: []string{"**"}}
	if _, err := ReviewIgnoring(context.Background(), llm, in); err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) != 1 || !strings.Contains(m.reqs[0].User, ".criticizer.yaml") {
		t.Fatalf("the settings file was not reviewed (%d requests)", len(m.reqs))
	}
}

// DropBelow keeps the comparison's counts true to what is shown.
// Rules: R-REPO-5.
func TestDropBelow_RecountsChanges(t *testing.T) {
	c := Critique{Summary: "Found 3 issues.", Findings: []Finding{
		{File: "a", Severity: SeverityError, New: true}, {File: "b", Severity: SeverityWarning}, {File: "c", Severity: SeverityInfo, New: true}},
		Changes: &Changes{Since: 1, New: 2, Unchanged: 1, Resolved: []Finding{{File: "d", Severity: SeverityWarning}}, ResolvedCount: 3}}
	got, n := DropBelow(c, SeverityError)
	if n != 2 || len(got.Findings) != 1 || got.Changes.New != 1 || got.Changes.Unchanged != 0 || got.Changes.ResolvedCount != 2 ||
		len(got.Changes.Resolved) != 0 || !strings.HasSuffix(got.Summary, "2 findings below error not shown.") {
		t.Fatalf("%d dropped, %+v %+v", n, got, got.Changes)
	}
	if len(c.Findings) != 3 || c.Changes.New != 2 {
		t.Fatal("DropBelow changed its argument")
	}
	if same, n := DropBelow(c, ""); n != 0 || len(same.Findings) != 3 {
		t.Fatal("no minimum dropped findings")
	}
}
