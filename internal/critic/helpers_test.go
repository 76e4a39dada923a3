package critic

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// addFile returns a git diff that creates path with the given lines.
func addFile(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/%s\n", path, path, path)
	fmt.Fprintf(&b, "@@ -0,0 +1,%d @@\n", len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// editFile returns a git diff that, in an existing path, replaces line 10
// with the given lines (so added lines are numbered from 10).
func editFile(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	fmt.Fprintf(&b, "@@ -9,2 +9,%d @@ func context() {\n unchanged\n-old line\n", len(lines)+1)
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// editTop returns a git diff that, in an existing path whose first line
// is first (kept as context), replaces line 2 with the given lines.
func editTop(path, first string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	fmt.Fprintf(&b, "@@ -1,2 +1,%d @@\n %s\n-old line\n", len(lines)+1, first)
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// review runs a fresh Offline critic and fails the test on error.
func review(t testing.TB, diffText string, opts ...Option) Critique {
	t.Helper()
	c, err := NewOffline(opts...).Review(context.Background(), Input{ChangelistID: "I1", ReviewVersion: 1, Diff: diffText})
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	return c
}

// ruleCase is a diff and the lines on which one rule must fire; an empty
// want means the rule must stay silent.
type ruleCase struct {
	name string
	diff string
	want []int
}

// runRuleCases checks every case against rule only, so cases need not care
// about unrelated findings.
func runRuleCases(t *testing.T, rule string, wantSeverity Severity, cases []ruleCase, opts ...Option) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := review(t, tc.diff, opts...)
			var got []int
			for _, f := range c.Findings {
				if f.Rule != rule {
					continue
				}
				got = append(got, f.Line)
				if f.Severity != wantSeverity {
					t.Errorf("finding %+v: severity %q, want %q", f, f.Severity, wantSeverity)
				}
				if f.Message == "" {
					t.Errorf("finding %+v has no message", f)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s findings on lines %v, want %v\nall findings: %+v", rule, got, tc.want, c.Findings)
			}
		})
	}
}

// Credentials are assembled at run time so that this file does not itself
// look like it leaks secrets to scanners (push protection, secret scanning).
var (
	fakeAWSKey     = "AKIA" + "Z7QW2ERT5YUI8OPA"
	fakeGitHub     = "ghp" + "_" + strings.Repeat("aB3dE6", 6)
	fakeSlack      = "xoxb" + "-" + "123456789012-abcdefABCDEF"
	fakePrivateKey = "-----BEGIN " + "RSA PRIVATE KEY-----"
	fakeGoogle     = "AIza" + strings.Repeat("Sy9_-kQ", 5)
	fakeStripe     = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	fakePassword   = "Tr0ub4dor&3q"
	fakeURLPass    = "s3cr3tPa55"
)
