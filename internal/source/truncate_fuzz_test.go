package source

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// FuzzTruncateDiff: TruncateDiff keeps at most max bytes (max <= 0: no
// limit), returns a prefix of the diff, reports a cut exactly when it
// shortened it, cuts only where a file ("diff --git ") or a hunk ("@@ ")
// starts, and keeps a diff that parses parseable.
func FuzzTruncateDiff(f *testing.F) {
	f.Add("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n", 10)
	f.Add("@@ -1 +1 @@\n-x\n+y\n@@ -5 +5 @@\n-x\n+y\n", 20)
	f.Add("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n", 60)
	f.Add(string(fixture(f, "github/pull.diff")), 700)
	f.Fuzz(func(t *testing.T, d string, max int) {
		got, cut := TruncateDiff(d, max)
		if max > 0 && len(got) > max {
			t.Fatalf("kept %d bytes, max %d", len(got), max)
		}
		if !strings.HasPrefix(d, got) {
			t.Fatal("not a prefix")
		}
		if cut != (got != d) {
			t.Fatalf("cut %v but got == d is %v", cut, got == d)
		}
		if cut && got != "" {
			rest := d[len(got):]
			if !strings.HasSuffix(got, "\n") || !(strings.HasPrefix(rest, "diff --git ") || strings.HasPrefix(rest, "@@ ")) {
				t.Fatalf("cut at %d, not where a file or a hunk starts: %q | %q", len(got), got, rest)
			}
		}
		if _, err := diff.ParseString(d); err == nil {
			if _, err := diff.ParseString(got); err != nil {
				t.Fatalf("the diff parses, the truncated one (%d of %d bytes) does not: %v", len(got), len(d), err)
			}
		}
	})
}
