package critic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// bugCritic is a fake critic that reports every added line holding "BUG",
// in words that change with each version (as a model rewords itself), and
// records which files it was sent.
type bugCritic struct {
	mu   sync.Mutex
	fp   string
	sent [][]string
	// overBudget names files to report left out for the budget; cut makes
	// the answer cut short.
	overBudget []string
	cut        bool
}

func (b *bugCritic) Fingerprint(Input) string { return b.fp }

func (b *bugCritic) Review(_ context.Context, in Input) (Critique, error) {
	d, err := diff.ParseString(in.Diff)
	if err != nil {
		return Critique{}, fmt.Errorf("%w: %w", ErrInvalidDiff, err)
	}
	var files []string
	c := Critique{Critic: "fake/bugs", Summary: "fake", Findings: []Finding{}, Cut: b.cut}
	for _, f := range d.Files {
		files = append(files, f.Path())
		if slices.Contains(b.overBudget, f.Path()) {
			c.Omitted = append(c.Omitted, Omitted{Path: f.Path(), Reason: OmitOverBudget})
			continue
		}
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l.Kind == diff.Added && strings.Contains(l.Text, "BUG") {
					c.Findings = append(c.Findings, Finding{File: f.Path(), Line: l.NewLine, Severity: SeverityError, Rule: "bug",
						Message: fmt.Sprintf("Version %d says: a bug on this line.", in.ReviewVersion)})
				}
			}
		}
	}
	slices.SortFunc(c.Findings, compareFindings)
	st := d.Stats()
	c.Files, c.Additions, c.Deletions = st.Files, st.Additions, st.Deletions
	b.mu.Lock()
	b.sent = append(b.sent, files)
	b.mu.Unlock()
	return c, nil
}

// lastSent is what the last review was sent.
func (b *bugCritic) lastSent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sent) == 0 {
		return nil
	}
	return b.sent[len(b.sent)-1]
}

// change is a diff of whole new files, path -> lines, in path order.
func change(files map[string][]string) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(addFile(p, files[p]...))
	}
	return b.String()
}

// rerun reviews diff as version v on top of prev (nil: a first review).
func rerun(t *testing.T, c Critic, v int, diffText string, prev *Critique, prevVersion int) Critique {
	t.Helper()
	in := Input{ChangelistID: "acme/app#7", ReviewVersion: v, Diff: diffText}
	if prev != nil {
		in.Previous = &Previous{Version: prevVersion, Critique: *prev}
	}
	out, err := c.Review(context.Background(), in)
	if err != nil {
		t.Fatalf("v%d: %v", v, err)
	}
	return out
}

func findingsOn(c Critique, file string) []Finding {
	var out []Finding
	for _, f := range c.Findings {
		if f.File == file {
			out = append(out, f)
		}
	}
	return out
}

// A rerun sends the critic only the files whose change differs from the
// reviewed version's; the others keep their findings word for word, and
// the ledger records every file with the hash of its section.
// Rules: R-COST-3.
func TestIncremental_OnlyChangedFilesAreSent(t *testing.T) {
	fake := &bugCritic{fp: "fp1"}
	ic := NewIncremental(fake)
	files := map[string][]string{
		"a.go": {"package a", "x := 1 // BUG"},
		"b.go": {"package b", "y := 2"},
		"c.go": {"package c", "z := 3 // BUG"},
	}
	v1 := rerun(t, ic, 1, change(files), nil, 0)
	if got := fake.lastSent(); !slices.Equal(got, []string{"a.go", "b.go", "c.go"}) {
		t.Fatalf("v1 sent %v; want every file", got)
	}
	if v1.Changes != nil || v1.Ledger == nil || len(v1.Ledger.Files) != 3 || v1.Ledger.Fingerprint != "fp1" {
		t.Fatalf("v1: changes %+v, ledger %+v; want no comparison and a ledger of 3 files", v1.Changes, v1.Ledger)
	}
	files["b.go"] = []string{"package b", "y := 2 // BUG"}
	v2 := rerun(t, ic, 2, change(files), &v1, 1)
	if got := fake.lastSent(); !slices.Equal(got, []string{"b.go"}) {
		t.Fatalf("v2 sent %v; want only the changed b.go", got)
	}
	for _, f := range []string{"a.go", "c.go"} {
		if !slices.Equal(findingsOn(v2, f), findingsOn(v1, f)) {
			t.Errorf("%s: v2 findings %+v; want v1's %+v carried over", f, findingsOn(v2, f), findingsOn(v1, f))
		}
	}
	if fs := findingsOn(v2, "b.go"); len(fs) != 1 || !fs[0].New || fs[0].Line != 2 {
		t.Errorf("b.go findings %+v; want one new finding on line 2", fs)
	}
	hashes := func(l *Ledger) map[string]string {
		m := map[string]string{}
		for _, f := range l.Files {
			m[f.Path] = f.SHA256
		}
		return m
	}
	h1, h2 := hashes(v1.Ledger), hashes(v2.Ledger)
	if len(h2) != 3 || h1["a.go"] != h2["a.go"] || h1["c.go"] != h2["c.go"] || h1["b.go"] == h2["b.go"] || len(h2["b.go"]) != 43 {
		t.Errorf("ledger hashes v1 %v, v2 %v; want a and c equal, b changed, 43-character SHA-256s", h1, h2)
	}
	ch := v2.Changes
	if ch == nil || ch.Since != 1 || ch.Reviewed != 1 || ch.Carried != 2 || ch.New != 1 || ch.Unchanged != 2 || ch.ResolvedCount != 0 {
		t.Fatalf("v2 changes %+v; want since 1, 1 reviewed, 2 carried, 1 new, 2 unchanged, 0 resolved", ch)
	}
	if v2.Files != 3 || v2.Additions != 6 {
		t.Errorf("v2 counts %d files +%d; want the whole diff's 3 files +6", v2.Files, v2.Additions)
	}
	// Nothing changed at all: no review, every finding carried.
	v3 := rerun(t, ic, 3, change(files), &v2, 2)
	if len(fake.sent) != 2 {
		t.Errorf("an unchanged diff was sent to the critic: %v", fake.lastSent())
	}
	if v3.Changes == nil || v3.Changes.Reviewed != 0 || v3.Changes.Unchanged != 3 || v3.Changes.New != 0 || !strings.Contains(v3.Summary, "No file changed since version 2") {
		t.Errorf("v3: %+v, summary %q; want 3 unchanged carried findings and a summary saying nothing changed", v3.Changes, v3.Summary)
	}
}

// A finding is the same across versions when it flags a line with the
// same text under the same rule in the same file, whatever the model's
// words and wherever an edit above moved the line; a second finding on
// another line is new; a file that left the diff has its findings
// resolved, listed with the lines they had.
// Rules: R-MAIL-3.
func TestIncremental_Comparison_RewordedMovedRemoved(t *testing.T) {
	ic := NewIncremental(&bugCritic{fp: "fp"})
	v1 := rerun(t, ic, 1, change(map[string][]string{
		"a.go":    {"package a", "", "call() // BUG"},
		"gone.go": {"package gone", "w := 0 // BUG"},
	}), nil, 0)
	v2 := rerun(t, ic, 2, change(map[string][]string{
		// Two lines above the flagged one, which moves from 3 to 5; a
		// second, different BUG line is new.
		"a.go": {"package a", "import \"os\"", "var _ = os.Args", "", "   call()   // BUG", "other() // BUG"},
	}), &v1, 1)
	a := findingsOn(v2, "a.go")
	if len(a) != 2 || a[0].Line != 5 || a[0].New || a[1].Line != 6 || !a[1].New {
		t.Fatalf("a.go findings %+v; want line 5 unchanged (moved, re-indented, reworded) and line 6 new", a)
	}
	if a[0].Message == findingsOn(v1, "a.go")[0].Message {
		t.Fatal("the fake did not reword: the test proves nothing")
	}
	ch := v2.Changes
	if ch.New != 1 || ch.Unchanged != 1 || ch.ResolvedCount != 1 || len(ch.Resolved) != 1 {
		t.Fatalf("changes %+v; want 1 new, 1 unchanged, 1 resolved", ch)
	}
	if r := ch.Resolved[0]; r.File != "gone.go" || r.Line != 2 || r.Anchor != "" || r.New {
		t.Errorf("resolved %+v; want gone.go's finding at its v1 line 2", r)
	}
}

// The identity is one to one, and a renamed rule on the same line is the
// same finding; the resolved list is bounded, most severe first.
func TestCompare_OneToOneRenamedRuleBoundedList(t *testing.T) {
	f := func(file, anchor, rule string, sev Severity) Finding {
		return Finding{File: file, Line: 1, Anchor: anchor, Rule: rule, Severity: sev, Message: "m"}
	}
	prev := &Previous{Version: 4, Critique: Critique{Findings: []Finding{
		f("x.go", "aa", "nil-deref", SeverityError), f("x.go", "bb", "race", SeverityWarning), f("x.go", "bb", "race", SeverityWarning),
	}}}
	for i := range 30 {
		prev.Critique.Findings = append(prev.Critique.Findings, f(fmt.Sprintf("old%02d.go", i), "cc", "r", []Severity{SeverityWarning, SeverityError}[i%2]))
	}
	cur := []Finding{f("x.go", "aa", "nil-dereference", SeverityError), f("x.go", "bb", "race", SeverityWarning)}
	ch, _ := compare(prev, cur, nil, func(Finding) bool { return true })
	if cur[0].New || cur[1].New || ch.New != 0 || ch.Unchanged != 2 {
		t.Errorf("cur %+v, changes %+v; want both unchanged", cur, ch)
	}
	// One of the two identical race findings is gone; 30 old files too.
	if ch.ResolvedCount != 31 || len(ch.Resolved) != MaxResolvedListed {
		t.Fatalf("resolved %d listed of %d; want %d of 31", len(ch.Resolved), ch.ResolvedCount, MaxResolvedListed)
	}
	errs := 0
	for _, r := range ch.Resolved {
		if r.Severity == SeverityError {
			errs++
		}
	}
	if errs != 15 {
		t.Errorf("%d errors among the resolved listed; want all 15, most severe first", errs)
	}
	// A file the review did not cover says nothing about its findings.
	ch, _ = compare(prev, nil, nil, func(f Finding) bool { return f.File == "x.go" })
	if ch.ResolvedCount != 3 {
		t.Errorf("resolved %d; want only x.go's 3", ch.ResolvedCount)
	}
}

// Another critic, other instructions (another fingerprint) or an
// operator's rerun review every file; only the operator's rerun is
// compared with the previous version.
// Rules: R-COST-3, R-MAIL-3.
func TestIncremental_FullReviewWhenFingerprintChangesOrFresh(t *testing.T) {
	fake := &bugCritic{fp: "instructions-1"}
	ic := NewIncremental(fake)
	files := map[string][]string{"a.go": {"a // BUG"}, "b.go": {"b"}}
	v1 := rerun(t, ic, 1, change(files), nil, 0)
	fake.fp = "instructions-2"
	v2 := rerun(t, ic, 2, change(files), &v1, 1)
	if got := fake.lastSent(); len(got) != 2 {
		t.Errorf("after a fingerprint change, sent %v; want every file", got)
	}
	if v2.Changes != nil || !strings.Contains(v2.Summary, "Reviewed in full: the critic or its instructions changed since version 1.") || v2.Ledger.Fingerprint != "instructions-2" {
		t.Errorf("v2 changes %+v, summary %q, ledger %q; want no comparison, the reason said, the new fingerprint", v2.Changes, v2.Summary, v2.Ledger.Fingerprint)
	}
	in := Input{ChangelistID: "acme/app#7", ReviewVersion: 3, Diff: change(files), Previous: &Previous{Version: 2, Critique: v2}, Fresh: true}
	v3, err := ic.Review(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.lastSent(); len(got) != 2 {
		t.Errorf("a fresh rerun sent %v; want every file", got)
	}
	if v3.Changes == nil || v3.Changes.Carried != 0 || v3.Changes.Reviewed != 2 || v3.Changes.Unchanged != 1 {
		t.Errorf("fresh rerun changes %+v; want 2 reviewed, none carried, 1 unchanged", v3.Changes)
	}
	// A critic that cannot name its settings is never built on.
	plain := NewIncremental(criticFunc(fake.Review))
	v4 := rerun(t, plain, 4, change(files), &v3, 3)
	if v4.Ledger != nil || v4.Changes != nil || len(fake.lastSent()) != 2 {
		t.Errorf("no fingerprint: ledger %+v, changes %+v, sent %v; want a plain full review", v4.Ledger, v4.Changes, fake.lastSent())
	}
}

type criticFunc func(context.Context, Input) (Critique, error)

func (f criticFunc) Review(ctx context.Context, in Input) (Critique, error) { return f(ctx, in) }

// A file left out for the budget, and files sent in an answer that was
// cut, are not in the ledger: the next version sends them again.
func TestIncremental_LedgerLeavesOutWhatWasNotFullyReviewed(t *testing.T) {
	fake := &bugCritic{fp: "fp", overBudget: []string{"big.go"}}
	ic := NewIncremental(fake)
	files := map[string][]string{"big.go": {"x"}, "small.go": {"y"}}
	v1 := rerun(t, ic, 1, change(files), nil, 0)
	if len(v1.Ledger.Files) != 1 || v1.Ledger.Files[0].Path != "small.go" {
		t.Fatalf("ledger %+v; want small.go only", v1.Ledger.Files)
	}
	fake.overBudget = nil
	rerun(t, ic, 2, change(files), &v1, 1)
	if got := fake.lastSent(); !slices.Equal(got, []string{"big.go"}) {
		t.Errorf("v2 sent %v; want big.go, skipped in v1", got)
	}
	fake.cut = true
	v3 := rerun(t, ic, 3, change(map[string][]string{"big.go": {"x"}, "small.go": {"y2"}}), &v1, 1)
	if got := fake.lastSent(); !slices.Equal(got, []string{"big.go", "small.go"}) {
		t.Errorf("v3 sent %v", got)
	}
	if len(v3.Ledger.Files) != 0 {
		t.Errorf("ledger after a cut answer %+v; want nothing recorded as reviewed", v3.Ledger.Files)
	}
}

// With the offline critic, "code changed without tests" is a judgement on
// the whole change: a rerun that changes only source, beside a test file
// carried over, does not report it; once no test is in the change, it is
// new; the summary counts the whole change.
// Rules: R-COST-3.
func TestIncremental_Offline_WholeChangeRuleOnTheWholeDiff(t *testing.T) {
	ic := NewIncremental(NewOffline())
	files := map[string][]string{
		"pkg/a.go":      {"package pkg", "func A() int { return 1 }"},
		"pkg/a_test.go": {"package pkg", "func TestA(t *testing.T) {}"},
	}
	v1 := rerun(t, ic, 1, change(files), nil, 0)
	files["pkg/a.go"] = []string{"package pkg", "func A() int { return 2 } // TODO: three"}
	v2 := rerun(t, ic, 2, change(files), &v1, 1)
	for _, f := range v2.Findings {
		if f.Rule == RuleMissingTests {
			t.Fatalf("v2 reports %q although the change holds a test file: %+v", f.Rule, f)
		}
	}
	if v2.Changes.Reviewed != 1 || v2.Changes.Carried != 1 || v2.Changes.New != 1 {
		t.Errorf("v2 changes %+v; want the source file reviewed, the test carried, the TODO new", v2.Changes)
	}
	if !strings.HasPrefix(v2.Summary, "This change touches 2 files") {
		t.Errorf("summary %q; want the whole change counted", v2.Summary)
	}
	delete(files, "pkg/a_test.go")
	v3 := rerun(t, ic, 3, change(files), &v2, 2)
	var missing []Finding
	for _, f := range v3.Findings {
		if f.Rule == RuleMissingTests {
			missing = append(missing, f)
		}
	}
	if len(missing) != 1 || !missing[0].New {
		t.Errorf("v3 missing-tests findings %+v; want one, new", missing)
	}
	// Every rule that judges the whole change is declared as such.
	for _, f := range review(t, addFile("x.go", "package x")).Findings {
		if f.Rule == RuleMissingTests && !slices.Contains(NewOffline().WholeChangeRules(), f.Rule) {
			t.Errorf("%s is not in WholeChangeRules", f.Rule)
		}
	}
}

// Through a model: the second version's prompt holds only the changed
// file, and the critique's tokens are that one call's.
// Rules: R-COST-3.
func TestIncremental_LLM_PromptHoldsOnlyChangedFiles(t *testing.T) {
	m := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`, InputTokens: 100, OutputTokens: 10}}
	l, err := NewLLM(m)
	if err != nil {
		t.Fatal(err)
	}
	ic := NewIncremental(l)
	files := map[string][]string{"a.go": {"package a"}, "b.go": {"package b"}, "c.go": {"package c"}}
	v1 := rerun(t, ic, 1, change(files), nil, 0)
	files["c.go"] = []string{"package c", "var C = 1"}
	m.reply.InputTokens = 40
	v2 := rerun(t, ic, 2, change(files), &v1, 1)
	if len(m.reqs) != 2 {
		t.Fatalf("%d model calls", len(m.reqs))
	}
	p := m.reqs[1].User
	if strings.Contains(p, "File: a.go") || strings.Contains(p, "File: b.go") || !strings.Contains(p, "File: c.go") {
		t.Errorf("v2 prompt:\n%s\nwant only c.go", p)
	}
	if v2.Usage == nil || v2.Usage.InputTokens != 40 || v2.Changes.Carried != 2 || v2.Files != 3 {
		t.Errorf("v2 usage %+v, changes %+v, files %d", v2.Usage, v2.Changes, v2.Files)
	}
	if l.Fingerprint(Input{ChangelistID: "x"}) == "" || l.Fingerprint(Input{}) != l.Fingerprint(Input{ChangelistID: "other"}) {
		t.Error("the fingerprint is empty or depends on more than the instructions that apply")
	}
	byRepo, _ := NewLLM(m, WithInstructions("", map[string]string{"acme/app": "money is int64 cents"}))
	if byRepo.Fingerprint(Input{ChangelistID: "acme/app#7"}) == byRepo.Fingerprint(Input{ChangelistID: "acme/web#7"}) {
		t.Error("a repository's instructions do not change the fingerprint")
	}
}

// A diff that does not parse is ErrInvalidDiff, as from every critic.
func TestIncremental_InvalidDiff(t *testing.T) {
	_, err := NewIncremental(NewOffline()).Review(context.Background(), Input{Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n+only\n+two\n"})
	if !errors.Is(err, ErrInvalidDiff) {
		t.Errorf("err %v; want ErrInvalidDiff", err)
	}
}

// A change of thousands of files records the first ones that fit the
// ledger's bound, so the critique stays far below DynamoDB's item limit;
// the rest are reviewed again next time.
func TestIncremental_LedgerIsBounded(t *testing.T) {
	files := map[string][]string{}
	for i := range 3000 {
		files[fmt.Sprintf("generated/module%04d/handler_with_a_long_name.go", i)] = []string{"x"}
	}
	c := rerun(t, NewIncremental(&bugCritic{fp: "fp"}), 1, change(files), nil, 0)
	b, err := json.Marshal(c.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxLedgerBytes || len(c.Ledger.Files) < 500 || len(c.Ledger.Files) == 3000 {
		t.Errorf("ledger of %d bytes, %d files; want at most %d bytes, several hundred files, not all 3000", len(b), len(c.Ledger.Files), maxLedgerBytes)
	}
}
