package critic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// richDiff triggers most rules across several files and kinds of change.
func richDiff() string {
	return addFile("svc/handler.go",
		"package svc",
		"",
		"// TODO: paginate",
		"func Handle() {",
		"\tfmt.Println(\"debug\")",
		"\t_ = conn.Close()",
		"\tpanic(\"unreachable\") ",
		"}") +
		editFile("web/app.ts", "console.log(state);", "debugger;", "it.only('x', () => {});") +
		"diff --git a/assets/logo.png b/assets/logo.png\nnew file mode 100644\nindex 0..1\nBinary files /dev/null and b/assets/logo.png differ\n" +
		"diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n--- a/old.py\n+++ b/new.py\n" +
		"@@ -1,2 +1,2 @@\n import os\n-x = 1\n+x = 2  # FIXME\n\\ No newline at end of file\n" +
		addFile("conf/app.yaml", "api_key: \"q8w7e6r5t4y3\"", strings.Repeat("y", 250)) +
		addFile("docs/guide.md", "<<<<<<< HEAD", "=======", ">>>>>>> main")
}

func TestReviewDeterministic(t *testing.T) {
	var first []byte
	for i := range 5 {
		c := review(t, richDiff())
		got, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(got, first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, got, first)
		}
	}
	// Pin the shape so that accidental changes to rules are noticed.
	c := review(t, richDiff())
	rules := map[string]bool{}
	for _, f := range c.Findings {
		rules[f.Rule] = true
	}
	for _, r := range []string{
		RuleTodoAdded, RuleDebugPrint, RuleDebuggerStatement, RuleHardcodedSecret, RuleMergeConflict,
		RuleGoPanic, RuleGoIgnoredError, RuleTrailingWhitespace, RuleLongLine, RuleNoNewlineAtEOF,
		RuleBinaryAdded, RuleMissingTests, RuleFocusedTest,
	} {
		if !rules[r] {
			t.Errorf("rich diff did not trigger %s", r)
		}
	}
}

func TestReviewFindingsSorted(t *testing.T) {
	c := review(t, richDiff())
	if !slices.IsSortedFunc(c.Findings, compareFindings) {
		t.Errorf("findings not sorted by file, line, rule: %+v", c.Findings)
	}
}

func TestReviewMaxFindingsTruncates(t *testing.T) {
	// 30 TODOs (info) and one leaked key (error) on the last line.
	ls := lines(30, "// TODO")
	ls = append(ls, "k := \""+fakeAWSKey+"\"")
	d := addFile("a_test.go", ls...)

	c := review(t, d, WithMaxFindings(5))
	if !c.Truncated || len(c.Findings) != 5 {
		t.Fatalf("Truncated = %v with %d findings, want true with 5", c.Truncated, len(c.Findings))
	}
	if !slices.ContainsFunc(c.Findings, func(f Finding) bool { return f.Rule == RuleHardcodedSecret }) {
		t.Error("the cap dropped the error-severity finding")
	}
	if !slices.IsSortedFunc(c.Findings, compareFindings) {
		t.Error("capped findings not sorted")
	}
	if !strings.Contains(c.Summary, "31 issues") || !strings.Contains(c.Summary, "Only the 5 most severe are listed.") {
		t.Errorf("summary does not explain the cap: %q", c.Summary)
	}

	// The same 31 findings on two files, each under MaxFindingsPerFile.
	d = addFile("a_test.go", lines(15, "// TODO")...) + addFile("b_test.go", append(lines(15, "// TODO"), "k := \""+fakeAWSKey+"\"")...)
	c = review(t, d)
	if c.Truncated || len(c.Findings) != 31 {
		t.Errorf("default cap: Truncated = %v with %d findings, want false with 31", c.Truncated, len(c.Findings))
	}
	c = review(t, d, WithMaxFindings(31))
	if c.Truncated {
		t.Error("Truncated set when findings exactly fill the cap")
	}
}

// TestReviewNeverEchoesSecrets plants credentials and e-mail addresses
// everywhere a diff can hold them and checks that none of them reaches the
// critique, while the credentials are still detected.
func TestReviewNeverEchoesSecrets(t *testing.T) {
	emails := []string{"alice.smith@example.com", "bob@corp.example.org", "carol+ops@mail.example.net"}
	secrets := []string{fakeAWSKey, fakeGitHub, fakeSlack, fakePrivateKey, fakeGoogle, fakeStripe, fakePassword, fakeURLPass}
	d := addFile("home/bob@corp.example.org/creds.go",
		"// Owner: alice.smith@example.com TODO rotate",
		"const awsKey = \""+fakeAWSKey+"\"",
		"var gh = \""+fakeGitHub+"\" // carol+ops@mail.example.net",
		"slack := \""+fakeSlack+"\"",
		fakePrivateKey,
		"google := \""+fakeGoogle+"\"",
		"stripe := \""+fakeStripe+"\"",
		"password := \""+fakePassword+"\"",
		"dsn := \"postgres://app:"+fakeURLPass+"@db.internal/app\"",
	) + addFile("keys/"+fakeAWSKey+".txt", "x")
	in := Input{
		ChangelistID: "I9", ReviewVersion: 2,
		Title:  "Add creds for alice.smith@example.com",
		Author: "Bob <bob@corp.example.org>",
		URL:    "https://review.example.com/c/9",
		Diff:   d,
	}
	c, err := NewOffline().Review(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(emails, secrets...) {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("critique contains %q:\n%s", s, out)
		}
	}
	n := 0
	for _, f := range c.Findings {
		if f.Rule == RuleHardcodedSecret {
			n++
		}
	}
	if n != len(secrets) {
		t.Errorf("detected %d secrets, want %d:\n%s", n, len(secrets), out)
	}

	// A malformed diff must not leak through the error either.
	_, err = NewOffline().Review(context.Background(), Input{Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@ " + fakeAWSKey + "\n+" + fakeAWSKey + "\n+x\n"})
	if err == nil || strings.Contains(err.Error(), fakeAWSKey) {
		t.Errorf("error = %v, want an error that does not quote the diff", err)
	}
}

func TestReviewInvalidDiff(t *testing.T) {
	for _, d := range []string{
		"--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n",
		"--- a/x\n+++ b/x\n@@ bogus @@\n",
		"--- a/x\n+++ b/x\n@@ -1 +1 @@\n+" + strings.Repeat("x", diff.MaxLineBytes+1) + "\n",
	} {
		_, err := NewOffline().Review(context.Background(), Input{Diff: d})
		if !errors.Is(err, ErrInvalidDiff) {
			t.Errorf("err = %v, want ErrInvalidDiff", err)
		}
		if !errors.Is(err, diff.ErrMalformed) {
			t.Errorf("err = %v, want it to wrap diff.ErrMalformed too", err)
		}
	}
}

func TestReviewEmptyDiff(t *testing.T) {
	for _, d := range []string{"", "\n\n", "commit abc\n\n    message only\n"} {
		c := review(t, d)
		if c.Critic != OfflineName || c.Files != 0 || len(c.Findings) != 0 || c.Findings == nil {
			t.Errorf("empty diff critique = %+v", c)
		}
		if !strings.Contains(c.Summary, "nothing to review") {
			t.Errorf("summary = %q, want it to say there is nothing to review", c.Summary)
		}
		out, _ := json.Marshal(c)
		if !bytes.Contains(out, []byte(`"findings":[]`)) {
			t.Errorf("findings not encoded as an empty array: %s", out)
		}
	}
}

func TestReviewSummary(t *testing.T) {
	tests := []struct {
		name string
		diff string
		want string
	}{
		{
			name: "clean change",
			diff: addFile("README.md", "hello"),
			want: "This change touches 1 file, adding 1 line and removing 0 lines. No issues were found.",
		},
		{
			name: "all severities",
			diff: addFile("svc/a.go", "// TODO", "\tpanic(1)", "k := \""+fakeAWSKey+"\"", "\tpanic(2)"),
			want: "This change touches 1 file, adding 4 lines and removing 0 lines. " +
				"Found 5 issues: 1 error, 3 warnings and 1 informational note.",
		},
		{
			name: "stats from several files",
			diff: editFile("a.md", "x", "y") + editFile("b.md", "z"),
			want: "This change touches 2 files, adding 3 lines and removing 2 lines. No issues were found.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := review(t, tt.diff).Summary; got != tt.want {
				t.Errorf("summary:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestReviewStats(t *testing.T) {
	c := review(t, editFile("a.md", "x", "y")+editFile("b.md", "z"))
	if c.Files != 2 || c.Additions != 3 || c.Deletions != 2 {
		t.Errorf("stats = %d files +%d -%d, want 2 +3 -2", c.Files, c.Additions, c.Deletions)
	}
}

func TestReviewCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewOffline().Review(ctx, Input{Diff: richDiff()})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrInvalidDiff) {
		t.Error("cancellation classified as an invalid diff")
	}
}

func TestNewOfflineIgnoresInvalidOptions(t *testing.T) {
	o := NewOffline(WithMaxFindings(0), WithLargeHunkLines(-1), WithLargeFileLines(0), WithLongLineChars(-5), nil)
	if o.cfg != defaultConfig() {
		t.Errorf("config = %+v, want defaults %+v", o.cfg, defaultConfig())
	}
}

func TestDisplayPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"svc/handler.go", "svc/handler.go"},
		{"users/alice@example.com/notes.md", "users/[redacted]/notes.md"},
		{"assets/icon@2x.png", "assets/icon@2x.png"},
		{"node_modules/@types/node/index.d.ts", "node_modules/@types/node/index.d.ts"},
		{"keys/" + fakeAWSKey + ".txt", "keys/[redacted].txt"},
	}
	for _, tt := range tests {
		if got := displayPath(tt.in); got != tt.want {
			t.Errorf("displayPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClassifyTestPaths(t *testing.T) {
	tests := []struct {
		path string
		test bool
	}{
		{"svc/a_test.go", true},
		{"app/test_models.py", true},
		{"app/models_test.py", true},
		{"app/conftest.py", true},
		{"web/Button.test.tsx", true},
		{"web/api.spec.js", true},
		{"src/test/java/com/x/FooTest.java", true},
		{"spec/models/user_spec.rb", true},
		{"internal/diff/testdata/a.diff", true},
		{"svc/a.go", false},
		{"app/contest.py", false},
		{"web/latest.js", false},
		{"src/main/java/com/x/Contest.java", false},
	}
	for _, tt := range tests {
		f := classify(&diff.File{NewPath: tt.path}, provenance{})
		if f.test != tt.test {
			t.Errorf("classify(%q).test = %v, want %v", tt.path, f.test, tt.test)
		}
	}
}
