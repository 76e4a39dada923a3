package diff

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// fileWant is the shape of one parsed file, with line counts instead of
// full line lists so that header tests stay readable.
type fileWant struct {
	old, new                                string
	added, deleted, renamed, copied, binary bool
	hunks, adds, dels                       int
}

func summarize(f File) fileWant {
	w := fileWant{
		old: f.OldPath, new: f.NewPath,
		added: f.Added, deleted: f.Deleted, renamed: f.Renamed, copied: f.Copied, binary: f.Binary,
		hunks: len(f.Hunks),
	}
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case Added:
				w.adds++
			case Removed:
				w.dels++
			}
		}
	}
	return w
}

func TestParseHeaderForms(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []fileWant
	}{
		{
			name: "empty input",
			in:   "",
			want: nil,
		},
		{
			name: "prose only",
			in:   "commit 1234\nAuthor: someone\n\n    --- not a header\n",
			want: nil,
		},
		{
			name: "git modification",
			in: "diff --git a/main.go b/main.go\nindex 1111111..2222222 100644\n--- a/main.go\n+++ b/main.go\n" +
				"@@ -1,2 +1,2 @@\n package main\n-var x = 1\n+var x = 2\n",
			want: []fileWant{{old: "main.go", new: "main.go", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "git new file",
			in: "diff --git a/new.go b/new.go\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/new.go\n" +
				"@@ -0,0 +1,2 @@\n+package main\n+\n",
			want: []fileWant{{new: "new.go", added: true, hunks: 1, adds: 2}},
		},
		{
			name: "git deleted file",
			in: "diff --git a/old.go b/old.go\ndeleted file mode 100644\nindex 3333333..0000000\n--- a/old.go\n+++ /dev/null\n" +
				"@@ -1 +0,0 @@\n-package main\n",
			want: []fileWant{{old: "old.go", deleted: true, hunks: 1, dels: 1}},
		},
		{
			name: "git empty new file followed by another file",
			in: "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000..e69de29\n" +
				"diff --git a/x.txt b/x.txt\nindex 1..2 100644\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{
				{new: "empty.txt", added: true},
				{old: "x.txt", new: "x.txt", hunks: 1, adds: 1, dels: 1},
			},
		},
		{
			name: "git pure rename",
			in:   "diff --git a/scripts/version.txt b/VERSION\nsimilarity index 100%\nrename from scripts/version.txt\nrename to VERSION\n",
			want: []fileWant{{old: "scripts/version.txt", new: "VERSION", renamed: true}},
		},
		{
			name: "git rename with edits",
			in: "diff --git a/a.go b/b.go\nsimilarity index 90%\nrename from a.go\nrename to b.go\nindex 1..2 100644\n--- a/a.go\n+++ b/b.go\n" +
				"@@ -1 +1 @@\n-x\n+y\n",
			want: []fileWant{{old: "a.go", new: "b.go", renamed: true, hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "git copy",
			in:   "diff --git a/a.go b/c.go\nsimilarity index 100%\ncopy from a.go\ncopy to c.go\n",
			want: []fileWant{{old: "a.go", new: "c.go", copied: true}},
		},
		{
			name: "git mode change only",
			in:   "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
			want: []fileWant{{old: "run.sh", new: "run.sh"}},
		},
		{
			name: "git binary without payload",
			in:   "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n",
			want: []fileWant{{old: "logo.png", new: "logo.png", binary: true}},
		},
		{
			name: "git binary patch payload is skipped",
			in: "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0..1\nGIT binary patch\nliteral 5\n" +
				"McmZ?wbaY^_0000\n\nliteral 0\nHcmV?d00001\n\n" +
				"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{
				{new: "logo.png", added: true, binary: true},
				{old: "x", new: "x", hunks: 1, adds: 1, dels: 1},
			},
		},
		{
			name: "plain diff -u with timestamps keeps directories",
			in: "diff -ru old/cfg.yaml new/cfg.yaml\n--- old/cfg.yaml\t2024-01-01 00:00:00.000000000 +0000\n" +
				"+++ new/cfg.yaml\t2024-01-02 00:00:00.000000000 +0000\n@@ -1 +1 @@\n-a: 1\n+a: 2\n",
			want: []fileWant{{old: "old/cfg.yaml", new: "new/cfg.yaml", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "plain diff with git prefixes strips them",
			in:   "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{{old: "x.go", new: "x.go", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "plain diff adding a file",
			in:   "--- /dev/null\n+++ b/x.go\n@@ -0,0 +1 @@\n+a\n",
			want: []fileWant{{new: "x.go", added: true, hunks: 1, adds: 1}},
		},
		{
			name: "plain binary message",
			in:   "Binary files old/logo.png and new/logo.png differ\n",
			want: []fileWant{{old: "old/logo.png", new: "new/logo.png", binary: true}},
		},
		{
			name: "quoted names with spaces and octal escapes",
			in: "diff --git \"a/docs/r\\303\\251sum\\303\\251 v2.md\" \"b/docs/r\\303\\251sum\\303\\251 v2.md\"\nindex 1..2 100644\n" +
				"--- \"a/docs/r\\303\\251sum\\303\\251 v2.md\"\n+++ \"b/docs/r\\303\\251sum\\303\\251 v2.md\"\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{{old: "docs/résumé v2.md", new: "docs/résumé v2.md", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "unquoted spaces in header only",
			in:   "diff --git a/my file.bin b/my file.bin\nindex 1..2 100644\nBinary files a/my file.bin and b/my file.bin differ\n",
			want: []fileWant{{old: "my file.bin", new: "my file.bin", binary: true}},
		},
		{
			name: "spaces with git's trailing tab",
			in:   "diff --git a/my file.txt b/my file.txt\nindex 1..2 100644\n--- a/my file.txt\t\n+++ b/my file.txt\t\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{{old: "my file.txt", new: "my file.txt", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "git --no-prefix",
			in:   "diff --git x.go x.go\nindex 1..2 100644\n--- x.go\n+++ x.go\n@@ -1 +1 @@\n-a\n+b\n",
			want: []fileWant{{old: "x.go", new: "x.go", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "format-patch mail with diffstat and signature",
			in: "From 1234 Mon Sep 17 00:00:00 2001\nFrom: Dev <dev@example.invalid>\nSubject: [PATCH] fix\n\nBody.\n---\n" +
				" x.go | 2 +-\n 1 file changed\n\ndiff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n" +
				"@@ -1 +1 @@\n-a\n+b\n-- \n2.39.5\n\n",
			want: []fileWant{{old: "x.go", new: "x.go", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "git log -p with indented messages between commits",
			in: "commit aaaa\nAuthor: A\n\n    first\n    --- quoted dashes\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n" +
				"commit bbbb\nAuthor: B\n\n    + looks like an addition\n\ndiff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1,2 @@\n y\n+z\n",
			want: []fileWant{
				{old: "x", new: "x", hunks: 1, adds: 1, dels: 1},
				{old: "y", new: "y", hunks: 1, adds: 1},
			},
		},
		{
			name: "CRLF line endings",
			in:   "diff --git a/x b/x\r\nindex 1..2 100644\r\n--- a/x\r\n+++ b/x\r\n@@ -1,2 +1,2 @@\r\n ctx\r\n-a\r\n+b\r\n",
			want: []fileWant{{old: "x", new: "x", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "count omitted means one",
			in:   "--- a/x\n+++ b/x\n@@ -3 +3 @@ func f() {\n-a\n+b\n",
			want: []fileWant{{old: "x", new: "x", hunks: 1, adds: 1, dels: 1}},
		},
		{
			name: "empty context line with stripped space",
			in:   "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n",
			want: []fileWant{{old: "x", new: "x", hunks: 1, adds: 1, dels: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseString(tt.in)
			if err != nil {
				t.Fatalf("ParseString: %v", err)
			}
			var got []fileWant
			for _, f := range d.Files {
				got = append(got, summarize(f))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("files:\n got %+v\nwant %+v", got, tt.want)
			}
			// The streaming parser must agree exactly.
			d2, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(d, d2) {
				t.Errorf("Parse and ParseString disagree")
			}
		})
	}
}

func TestParseLineNumbers(t *testing.T) {
	in := "diff --git a/f.go b/f.go\n--- a/f.go\n+++ b/f.go\n" +
		"@@ -10,4 +10,5 @@ func f() {\n" +
		" a\n" +
		"-b\n" +
		"+B\n" +
		"+B2\n" +
		" c\n" +
		" d\n" +
		"@@ -30,2 +31,1 @@\n" +
		" x\n" +
		"-y\n" +
		"\\ No newline at end of file\n"
	d, err := ParseString(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || len(d.Files[0].Hunks) != 2 {
		t.Fatalf("got %d files", len(d.Files))
	}
	h0, h1 := d.Files[0].Hunks[0], d.Files[0].Hunks[1]
	if h0.OldStart != 10 || h0.OldLines != 4 || h0.NewStart != 10 || h0.NewLines != 5 || h0.Section != "func f() {" {
		t.Errorf("hunk 0 header = %+v", h0)
	}
	want0 := []Line{
		{Kind: Context, Text: "a", OldLine: 10, NewLine: 10},
		{Kind: Removed, Text: "b", OldLine: 11},
		{Kind: Added, Text: "B", NewLine: 11},
		{Kind: Added, Text: "B2", NewLine: 12},
		{Kind: Context, Text: "c", OldLine: 12, NewLine: 13},
		{Kind: Context, Text: "d", OldLine: 13, NewLine: 14},
	}
	if !reflect.DeepEqual(h0.Lines, want0) {
		t.Errorf("hunk 0 lines:\n got %+v\nwant %+v", h0.Lines, want0)
	}
	want1 := []Line{
		{Kind: Context, Text: "x", OldLine: 30, NewLine: 31},
		{Kind: Removed, Text: "y", OldLine: 31, NoNewline: true},
	}
	if !reflect.DeepEqual(h1.Lines, want1) {
		t.Errorf("hunk 1 lines:\n got %+v\nwant %+v", h1.Lines, want1)
	}
	if h1.Section != "" {
		t.Errorf("hunk 1 section = %q, want empty", h1.Section)
	}
}

func TestParseNoNewlineMarkers(t *testing.T) {
	in := "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
	d, err := ParseString(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := d.Files[0].Hunks[0].Lines
	if lines[0].NoNewline || !lines[1].NoNewline || !lines[2].NoNewline {
		t.Errorf("NoNewline flags = %v %v %v, want false true true",
			lines[0].NoNewline, lines[1].NoNewline, lines[2].NoNewline)
	}
}

func TestParseMalformed(t *testing.T) {
	const head = "diff --git a/x b/x\n--- a/x\n+++ b/x\n" // lines 1-3
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"hunk header with letters", head + "@@ -a +1 @@\n", 4},
		{"hunk header not closed", head + "@@ -1,2 +1,2\n a\n", 4},
		{"hunk header missing new range", head + "@@ -1,2 @@\n", 4},
		{"hunk header text glued to @@", head + "@@ -1 +1 @@x\n-a\n+b\n", 4},
		{"hunk header number overflows", head + "@@ -99999999999999999999 +1 @@\n", 4},
		{"hunk header non-empty range at line 0", head + "@@ -0,1 +1 @@\n-a\n+b\n", 4},
		{"hunk shorter than header before next file", head + "@@ -1,3 +1,3 @@\n a\ndiff --git a/y b/y\n", 6},
		{"hunk shorter than header at end of input", head + "@@ -1,3 +1,3 @@\n a\n b\n", 4},
		{"hunk longer than header", head + "@@ -1 +1 @@\n-a\n+b\n+c\n", 7},
		{"added line beyond new count", head + "@@ -1 +1 @@\n+a\n+b\n", 6},
		{"removed line beyond old count", head + "@@ -1 +1,2 @@\n-a\n-b\n", 6},
		{"context line beyond one side", head + "@@ -1 +1,2 @@\n-a\n b\n", 6},
		{"hunk outside any file", "@@ -1 +1 @@\n-a\n+b\n", 1},
		{"hunk before --- and +++", "diff --git a/x b/x\n@@ -1 +1 @@\n", 2},
		{"--- without +++ in git header", "diff --git a/x b/x\n--- a/x\nindex 1..2\n", 2},
		{"combined diff", "diff --cc x.go\nindex 1,2..3\n", 1},
		{"no-newline marker without line", head + "\\ No newline at end of file\n", 4},
		{"repeated no-newline marker", head + "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n\\ No newline at end of file\n+b\n", 7},
		{"both sides /dev/null", "--- /dev/null\n+++ /dev/null\n", 2},
		{"added and deleted", "diff --git a/x b/x\nnew file mode 100644\ndeleted file mode 100644\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, parse := range parsers {
				_, err := parse.fn(tt.in)
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s: err = %v, want ErrMalformed", parse.name, err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("%s: err = %T, want *ParseError", parse.name, err)
				}
				if pe.Line != tt.line {
					t.Errorf("%s: line = %d, want %d (%v)", parse.name, pe.Line, tt.line, err)
				}
			}
		})
	}
}

var parsers = []struct {
	name string
	fn   func(string) (*Diff, error)
}{
	{"ParseString", ParseString},
	{"Parse", func(s string) (*Diff, error) { return Parse(strings.NewReader(s)) }},
}

func TestParseLineTooLong(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+1)
	in := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+" + long + "\n"
	for _, parse := range parsers {
		_, err := parse.fn(in)
		if !errors.Is(err, ErrLineTooLong) || !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: err = %v, want ErrLineTooLong wrapping ErrMalformed", parse.name, err)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 5 {
			t.Errorf("%s: err = %v, want line 5", parse.name, err)
		}
	}
	// Exactly at the limit, with a CRLF terminator, is fine.
	atLimit := "--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+" + strings.Repeat("y", MaxLineBytes-1) + "\r\n"
	for _, parse := range parsers {
		if _, err := parse.fn(atLimit); err != nil {
			t.Errorf("%s: line at the limit: %v", parse.name, err)
		}
	}
}

func TestParseErrorDoesNotQuoteInput(t *testing.T) {
	secret := "AKIA" + strings.Repeat("Q", 16)
	_, err := ParseString("--- a/x\n+++ b/x\n@@ -1 +1 @@ " + secret + "\n+" + secret + "\n+" + secret + "\n")
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error message echoes input: %v", err)
	}
}

func TestParseNilReader(t *testing.T) {
	if _, err := Parse(nil); err == nil {
		t.Error("Parse(nil) returned no error")
	}
}

func TestStats(t *testing.T) {
	d, err := ParseString("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d\n" +
		"diff --git a/p.png b/p.png\nBinary files a/p.png and b/p.png differ\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Stats(), (Stats{Files: 2, Additions: 2, Deletions: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	var nilDiff *Diff
	if got := nilDiff.Stats(); got != (Stats{}) {
		t.Errorf("nil Stats() = %+v", got)
	}
}

func TestFilePath(t *testing.T) {
	tests := []struct {
		f    File
		want string
	}{
		{File{OldPath: "a", NewPath: "b"}, "b"},
		{File{NewPath: "n", Added: true}, "n"},
		{File{OldPath: "o", Deleted: true}, "o"},
	}
	for _, tt := range tests {
		if got := tt.f.Path(); got != tt.want {
			t.Errorf("%+v.Path() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestParseTestdata checks the hand-made corpus (also the fuzz seeds) against
// what each file is known to contain.
func TestParseTestdata(t *testing.T) {
	tests := map[string][]fileWant{
		"go_change_with_test.diff": {
			{old: "internal/ratelimit/limiter.go", new: "internal/ratelimit/limiter.go", hunks: 2, adds: 21, dels: 7},
			{old: "internal/ratelimit/limiter_test.go", new: "internal/ratelimit/limiter_test.go", hunks: 2, adds: 15, dels: 1},
		},
		"rename.diff": {
			{old: "scripts/version.txt", new: "VERSION", renamed: true},
			{old: "app/review.py", new: "app/gerrit_review.py", renamed: true, hunks: 1, adds: 1, dels: 1},
		},
		"binary.diff": {
			{new: "assets/icon@2x.png", added: true, binary: true},
			{old: "assets/logo.png", new: "assets/logo.png", binary: true},
			{old: "docs/setup.md", new: "docs/setup.md", hunks: 1, adds: 1},
		},
		"deletion.diff": {
			{old: "assets/logo.png", deleted: true, binary: true},
			{old: "docs/old-notes.txt", deleted: true, hunks: 1, dels: 2},
			{old: "scripts/build.sh", deleted: true, hunks: 1, dels: 4},
			{old: "scripts/empty-later.txt", new: "scripts/empty-later.txt", hunks: 1, dels: 1},
		},
		"no_newline_eof.diff": {
			{old: "old/config.yaml", new: "new/config.yaml", hunks: 1, adds: 3, dels: 2},
			{old: "old/list.txt", new: "new/list.txt", hunks: 1, adds: 1},
		},
		"multi_hunk.diff": {
			{old: "app/gerrit_review.py", new: "app/gerrit_review.py", hunks: 4, adds: 7, dels: 6},
		},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.diff"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("testdata has %d diffs, test knows %d", len(files), len(tests))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, ok := tests[filepath.Base(path)]
			if !ok {
				t.Fatal("no expectation for this file")
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseString(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			var got []fileWant
			for _, f := range d.Files {
				got = append(got, summarize(f))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("files:\n got %+v\nwant %+v", got, want)
			}
			checkInvariants(t, d)
		})
	}
}

func TestParseTestdataNoNewline(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "no_newline_eof.diff"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseString(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	lines := d.Files[0].Hunks[0].Lines
	last := lines[len(lines)-1]
	if last.Kind != Added || last.Text != "retries: 3" || last.NewLine != 4 || !last.NoNewline {
		t.Errorf("last line = %+v", last)
	}
	if removed := lines[2]; removed.Kind != Removed || !removed.NoNewline {
		t.Errorf("old last line = %+v", removed)
	}
}

// TestParseCRLFMatchesLF pins CRLF tolerance: the same diff with either line
// ending parses to the same structure.
func TestParseCRLFMatchesLF(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "go_change_with_test.diff"))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ParseString(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	crlf, err := ParseString(strings.ReplaceAll(string(raw), "\n", "\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lf, crlf) {
		t.Error("CRLF and LF parses differ")
	}
}

// TestParseEveryPrefix feeds every truncation of the corpus to the parser:
// none may panic, and each either parses or fails with ErrMalformed.
func TestParseEveryPrefix(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.diff"))
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(raw) + 1 {
			d, err := ParseString(string(raw[:i]))
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s[:%d]: %v", path, i, err)
				}
				continue
			}
			checkInvariants(t, d)
		}
	}
}

// checkInvariants asserts what every successful parse guarantees.
func checkInvariants(t *testing.T, d *Diff) {
	t.Helper()
	adds, dels := 0, 0
	for _, f := range d.Files {
		if f.Added && f.Deleted {
			t.Fatalf("%q is both added and deleted", f.Path())
		}
		for _, h := range f.Hunks {
			oldN, newN := 0, 0
			nextOld, nextNew := h.OldStart, h.NewStart
			for _, l := range h.Lines {
				switch l.Kind {
				case Context:
					if l.OldLine != nextOld || l.NewLine != nextNew {
						t.Fatalf("context line numbered %d/%d, want %d/%d", l.OldLine, l.NewLine, nextOld, nextNew)
					}
					oldN++
					newN++
					nextOld++
					nextNew++
				case Added:
					if l.OldLine != 0 || l.NewLine != nextNew {
						t.Fatalf("added line numbered %d/%d, want 0/%d", l.OldLine, l.NewLine, nextNew)
					}
					adds++
					newN++
					nextNew++
				case Removed:
					if l.NewLine != 0 || l.OldLine != nextOld {
						t.Fatalf("removed line numbered %d/%d, want %d/0", l.OldLine, l.NewLine, nextOld)
					}
					dels++
					oldN++
					nextOld++
				default:
					t.Fatalf("line of kind %v", l.Kind)
				}
			}
			if oldN != h.OldLines || newN != h.NewLines {
				t.Fatalf("hunk has %d/%d lines, header says %d/%d", oldN, newN, h.OldLines, h.NewLines)
			}
		}
	}
	if s := d.Stats(); s.Additions != adds || s.Deletions != dels || s.Files != len(d.Files) {
		t.Fatalf("Stats() = %+v, counted %d files, %d additions, %d deletions", s, len(d.Files), adds, dels)
	}
}

func TestParseReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(io.MultiReader(strings.NewReader("--- a/x\n+++ b/x\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap the reader's error", err)
	}
	if errors.Is(err, ErrMalformed) {
		t.Errorf("I/O error classified as malformed input: %v", err)
	}
}
