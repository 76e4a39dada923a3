package diff

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkRoundTrip requires Format's text to parse back to files.
func checkRoundTrip(t *testing.T, files []File) {
	t.Helper()
	text := Format(files...)
	back, err := ParseString(text)
	if err != nil {
		t.Fatalf("Format's output does not parse: %v\n%s", err, text)
	}
	if len(files) == 0 && len(back.Files) == 0 {
		return
	}
	if !reflect.DeepEqual(back.Files, files) {
		t.Fatalf("Format's output parses to other files:\n got  %+v\n want %+v\ntext:\n%s", back.Files, files, text)
	}
}

// Every recorded diff, and the shapes that need care (names git quotes,
// binary files, renames and copies, a missing final newline, a line that
// ends in a carriage return, hunk headers with and without a section,
// mode-only changes), survive Format and Parse unchanged.
func TestFormat_ParsesBackToTheSameFiles(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.diff"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join("..", "source", "testdata", "github", "pull.diff"),
		filepath.Join("..", "source", "testdata", "gerrit", "patch.mbox"))
	inputs := map[string]string{
		"quoted names": "diff --git \"a/d\\303\\251j\\303\\240 vu.go\" \"b/d\\303\\251j\\303\\240 vu.go\"\n--- \"a/d\\303\\251j\\303\\240 vu.go\"\n+++ \"b/d\\303\\251j\\303\\240 vu.go\"\n@@ -1 +1 @@\n-a\n+b\n",
		"space, tab and quote": "--- a/x y\t2024-01-01\n+++ b/x y\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n" +
			"diff --git \"a/q\\\"\\tz\" \"b/q\\\"\\tz\"\ndeleted file mode 100644\n--- \"a/q\\\"\\tz\"\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
		"binary added and plain binary": "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 5\nMcmZ?wbhEHbZ~y\n\n" +
			"Binary files a/old.bin and b/old.bin differ\n",
		"rename and copy": "diff --git a/a.go b/b.go\nsimilarity index 100%\nrename from a.go\nrename to b.go\n" +
			"diff --git a/c.go b/d.go\ncopy from c.go\ncopy to d.go\n--- a/c.go\n+++ b/d.go\n@@ -3,2 +3,3 @@ func f() {\n x\n+y\n z\n",
		"no newline and CR":        "--- a/n\n+++ b/n\n@@ -1,2 +1,2 @@\n a\r\r\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
		"mode only and empty file": "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\ndiff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n",
		"hunk at line 0":           "--- a/e\n+++ b/e\n@@ -0,0 +1 @@ \t  indented section\n+first\n",
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = string(b)
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			d, err := ParseString(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Files) == 0 {
				t.Fatal("no files parsed: the case tests nothing")
			}
			checkRoundTrip(t, d.Files)
			// One file at a time too: a file's text stands alone.
			for _, f := range d.Files {
				checkRoundTrip(t, []File{f})
			}
		})
	}
}

// The canonical text leaves out what carries nothing a reviewer reads:
// the same change with another index line or commit message formats to
// the same bytes, and a change to any line does not.
func TestFormat_CanonicalText(t *testing.T) {
	a := "From 1 Mon\nSubject: one\n\ndiff --git a/x.go b/x.go\nindex 1111111..2222222 100644\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@ func f() {\n a\n-b\n+c\n"
	b := "Subject: two\n\ndiff --git a/x.go b/x.go\nindex 3333333..4444444 100755\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@ func f() {\n a\n-b\n+c\n-- \n2.43.0\n"
	c := strings.Replace(a, "+c", "+d", 1)
	f := func(s string) string {
		d, err := ParseString(s)
		if err != nil {
			t.Fatal(err)
		}
		return Format(d.Files...)
	}
	if f(a) != f(b) {
		t.Errorf("the same change formats differently:\n%s\n%s", f(a), f(b))
	}
	if f(a) == f(c) {
		t.Error("a changed line formats the same")
	}
}
