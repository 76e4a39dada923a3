package critic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/diff"
)

func mustParse(t *testing.T, text string) *diff.Diff {
	t.Helper()
	d, err := diff.ParseString(text)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Each finding on a line of the diff gets that line and up to two lines
// on each side of it in its hunk, in the diff's order with their markers,
// the flagged one marked; a whole-file finding, one on a line outside
// the hunks, one on a file the diff does not hold or holds twice, get
// none; what a finding carried is replaced, and resolved findings carry
// none. The text is cleaned: tabs expanded, control and bidi characters
// made visible, long lines cut, credentials and addresses redacted, a
// private key's lines masked.
// Rules: R-MAIL-5.
func TestExcerpts_FlaggedLineAndTwoAroundCleanedAndRedacted(t *testing.T) {
	edit := "diff --git a/a.go b/a.go\nindex 1..2 100644\n--- a/a.go\n+++ b/a.go\n" +
		"@@ -10,6 +10,6 @@ func Total() {\n" +
		" \tone := 1\n" +
		" \ttwo := 2\n" +
		"-\tfmt.Print(one)\n" +
		"+\tfmt.Println(one, two) // <script>alert(1)</script>\n" +
		" \tthree := 3\n" +
		" \tfour := 4\n" +
		" \treturn one\n"
	long := strings.Repeat("x", 300)
	bidi := "access := \"user\u202e \u2066// admin\u2069 \u2066\" // \x1b[31m"
	secrets := addFile("keys.go",
		"var key = \""+fakeAWSKey+"\"",
		"// mail ops@example.com",
		fakePrivateKey,
		"MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB",
		"aGFsZiBvZiBhIGtleQ==",
		"-----END RSA PRIVATE KEY-----",
		long,
		bidi,
	)
	twice := addFile("dup.go", "package dup") + addFile("dup.go", "package dup")
	d := mustParse(t, edit+secrets+twice)
	c := Critique{
		Findings: []Finding{
			{File: "a.go", Line: 12, Rule: "debug-print", Excerpt: Excerpt{Lines: "+stale", At: 1}},
			{File: "a.go", Line: 10, Rule: "first"},
			{File: "a.go", Line: 0, Rule: "whole-file"},
			{File: "a.go", Line: 40, Rule: "outside"},
			{File: "gone.go", Line: 1, Rule: "gone"},
			{File: "dup.go", Line: 1, Rule: "twice"},
			{File: "keys.go", Line: 1, Rule: "hardcoded-secret"},
			{File: "keys.go", Line: 4, Rule: "in-key"},
			{File: "keys.go", Line: 7, Rule: "long"},
			{File: "keys.go", Line: 8, Rule: "bidi"},
		},
		Changes: &Changes{Resolved: []Finding{{File: "a.go", Line: 12, Rule: "old", Excerpt: Excerpt{Lines: " x", At: 1}}}},
	}
	out := Excerpts(c, d)
	got := map[string]Excerpt{}
	for _, f := range out.Findings {
		got[f.Rule] = f.Excerpt
	}
	want := " \ttwo := 2\n-\tfmt.Print(one)\n+\tfmt.Println(one, two) // <script>alert(1)</script>\n \tthree := 3\n \tfour := 4"
	want = strings.ReplaceAll(want, "\t", "    ")
	if e := got["debug-print"]; e.Lines != want || e.At != 3 {
		t.Errorf("debug-print excerpt %q at %d, want %q at 3", e.Lines, e.At, want)
	}
	lines := got["debug-print"].Split()
	if len(lines) != 5 || lines[1].Kind != '-' || lines[2].Kind != '+' || !lines[2].Flagged || lines[1].Flagged || lines[0].Kind != ' ' {
		t.Errorf("split %+v", lines)
	}
	if e := got["first"]; e.At != 1 || strings.Count(e.Lines, "\n") != 2 {
		t.Errorf("first line's excerpt %q at %d: want it first, two after it", e.Lines, e.At)
	}
	for _, r := range []string{"whole-file", "outside", "gone", "twice"} {
		if got[r] != (Excerpt{}) {
			t.Errorf("%s has an excerpt %+v, want none", r, got[r])
		}
	}
	if out.Changes.Resolved[0].Excerpt != (Excerpt{}) || c.Changes.Resolved[0].Excerpt.Lines == "" {
		t.Errorf("resolved finding keeps an excerpt, or the input was changed")
	}
	all := ""
	for _, e := range got {
		all += e.Lines + "\n"
	}
	for _, leak := range []string{fakeAWSKey, "ops@example.com", "MIIEowIBAAKCAQEA0Z3VS5JJ", "aGFsZiBvZiBhIGtleQ", "\u202e", "\u2066", "\x1b", "\t"} {
		if strings.Contains(all, leak) {
			t.Errorf("excerpts hold %q:\n%s", leak, all)
		}
	}
	if !strings.Contains(got["in-key"].Lines, "[REDACTED:private_key]") || !strings.Contains(got["hardcoded-secret"].Lines, "[REDACTED:") {
		t.Errorf("secret lines not masked: %q / %q", got["hardcoded-secret"].Lines, got["in-key"].Lines)
	}
	for _, l := range got["long"].Split() {
		if n := utf8.RuneCountInString(l.Text); n > ExcerptLineRunes {
			t.Errorf("a line of %d runes, want at most %d", n, ExcerptLineRunes)
		}
		if l.Flagged && !strings.HasSuffix(l.Text, "x…") {
			t.Errorf("long line not cut with an ellipsis: %q", l.Text)
		}
	}
	if b := got["bidi"].Lines; !strings.Contains(b, "\uFFFD") {
		t.Errorf("bidi line %q: want its format characters shown as U+FFFD", b)
	}
	// A finding stays comparable and its JSON carries the excerpt only
	// when it has one.
	bs, _ := json.Marshal(out.Findings[2])
	if strings.Contains(string(bs), "excerpt") {
		t.Errorf("a finding without code encodes %s", bs)
	}
	if out.Findings[0] == c.Findings[0] {
		t.Error("the carried excerpt was kept")
	}
}

// Over the critique's size bound, the code at the findings goes first,
// the least serious findings' first, each marked cut; the findings stay
// as long as dropping code is enough.
// Rules: R-BOUND-2, R-MAIL-5.
func TestBound_ExcerptsCutBeforeFindings(t *testing.T) {
	c := Critique{Critic: "fake", Summary: "Big."}
	code := strings.Repeat("<", ExcerptLineRunes) // 6 bytes each in JSON
	lines := strings.Join([]string{"+" + code, "+" + code, "+" + code, "+" + code, "+" + code}, "\n")
	for i := range MaxFindingsTotal {
		sev := SeverityWarning
		if i%10 == 0 {
			sev = SeverityError
		}
		c.Findings = append(c.Findings, Finding{File: fmt.Sprintf("f%02d.go", i/5), Line: i + 1, Severity: sev, Rule: "r",
			Message: "m", Excerpt: Excerpt{Lines: lines, At: 3}})
	}
	if size(c) <= MaxCritiqueBytes {
		t.Fatalf("the case is %d bytes, want it over the bound", size(c))
	}
	out := Bound(c)
	if size(out) > MaxCritiqueBytes || len(out.Findings) != MaxFindingsTotal || out.NotShown != 0 {
		t.Fatalf("%d bytes, %d findings, %d not shown; want every finding kept within %d bytes", size(out), len(out.Findings), out.NotShown, MaxCritiqueBytes)
	}
	kept, cut := 0, 0
	for _, f := range out.Findings {
		switch {
		case f.Excerpt.Cut && f.Excerpt.Lines == "":
			cut++
			if f.Severity == SeverityError {
				t.Errorf("an error's code was cut while a warning's was kept")
			}
		case f.Excerpt.Lines == lines:
			kept++
		default:
			t.Errorf("excerpt %+v", f.Excerpt)
		}
	}
	if kept < 10 || cut == 0 {
		t.Errorf("%d excerpts kept, %d cut; want the errors' kept and some cut", kept, cut)
	}
	if again := Bound(out); size(again) != size(out) {
		t.Error("bounding a bounded critique changed it")
	}
}
