package critic

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// FuzzOfflineReview checks that no diff makes Review panic, that failures
// are always classified as ErrInvalidDiff, and that every successful
// critique is well-formed: findings point at files in the diff, are sorted,
// respect the cap, and the stats match the parser's.
func FuzzOfflineReview(f *testing.F) {
	f.Add(richDiff())
	f.Add("")
	f.Add(addFile("a.go", "// TODO", "\t_ = f()", "<<<<<<< HEAD"))
	f.Add(editFile("web/x.test.js", "it.only('x', () => {}); // console.log"))
	f.Add("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n")
	f.Add("diff --git a/p.png b/p.png\nnew file mode 100644\nBinary files /dev/null and b/p.png differ\n")
	f.Add(addFile("users/a@b.example/k.go", "k := \"AKIA"+"ABCDEFGHIJKLMNOP\""))
	// The recorded diffs: the parser's testdata, the sources' fetched diffs
	// and the generic sample's inline diff.
	files, _ := filepath.Glob(filepath.Join("..", "diff", "testdata", "*.diff"))
	files = append(files, filepath.Join("..", "source", "testdata", "github", "pull.diff"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	var sample struct{ Diff string }
	if b, err := os.ReadFile(filepath.Join("..", "..", "events", "generic-webhook.json")); err != nil || json.Unmarshal(b, &sample) != nil {
		f.Fatalf("read the generic sample: %v", err)
	}
	f.Add(sample.Diff)

	const maxFindings = 20
	critic := NewOffline(WithMaxFindings(maxFindings), WithLargeHunkLines(5), WithLargeFileLines(10), WithLongLineChars(40))
	f.Fuzz(func(t *testing.T, in string) {
		c, err := critic.Review(context.Background(), Input{Diff: in})
		if err != nil {
			if !errors.Is(err, ErrInvalidDiff) {
				t.Fatalf("error not classified as ErrInvalidDiff: %v", err)
			}
			return
		}
		d, err := diff.ParseString(in)
		if err != nil {
			t.Fatalf("Review succeeded but the diff does not parse: %v", err)
		}
		files := map[string]bool{}
		for _, df := range d.Files {
			files[displayPath(df.Path())] = true
		}
		for _, fd := range c.Findings {
			if !files[fd.File] {
				t.Fatalf("finding %+v names a file not in the diff (%v)", fd, files)
			}
			if fd.Line < 0 || fd.Rule == "" || fd.Message == "" || fd.Severity.rank() == 0 {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		if len(c.Findings) > maxFindings || (c.Truncated && len(c.Findings) != maxFindings) {
			t.Fatalf("%d findings, truncated=%v, cap %d", len(c.Findings), c.Truncated, maxFindings)
		}
		if !slices.IsSortedFunc(c.Findings, compareFindings) {
			t.Fatal("findings not sorted")
		}
		if s := d.Stats(); c.Files != s.Files || c.Additions != s.Additions || c.Deletions != s.Deletions {
			t.Fatalf("critique stats %d/%d/%d, parser %+v", c.Files, c.Additions, c.Deletions, s)
		}
		if c.Summary == "" || c.Findings == nil {
			t.Fatalf("incomplete critique %+v", c)
		}
	})
}
