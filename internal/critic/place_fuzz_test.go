package critic

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// FuzzPlace checks, for any diff, the promises a reader's mark rests on
// (R-VOTE-3): a Place is empty or 16 hex characters (a digest, no
// source); two lines of one file with the same text never share one (a
// mark on one never hides the other); and lines inserted above the diff
// (every new line number moved down by shift) leave every line's Place
// as it was (a mark follows its line). Seeds: the parser's recorded
// diffs, the fetched GitHub diff and the committed files under
// testdata/fuzz/FuzzPlace (copied blocks, a copy above the line).
func FuzzPlace(f *testing.F) {
	f.Add(addFile("a.go", goFile(refundFunc, totalFunc)...), uint8(5))
	f.Add("--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n+\n+dbg()\n \n", uint8(1))
	files, _ := filepath.Glob(filepath.Join("..", "diff", "testdata", "*.diff"))
	files = append(files, filepath.Join("..", "source", "testdata", "github", "pull.diff"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, shift uint8) {
		d, err := diff.ParseString(in)
		if err != nil {
			return
		}
		for i := range d.Files {
			file := &d.Files[i]
			x := newPlaceIndex(file)
			moved := shifted(*file, int(shift)+1)
			y := newPlaceIndex(&moved)
			byText := map[string]map[string]int{}
			for _, h := range file.Hunks {
				for _, l := range h.Lines {
					if l.Kind == diff.Removed {
						continue
					}
					p := x.place(l.NewLine)
					if p != "" && (len(p) != 16 || strings.Trim(p, "0123456789abcdef") != "") {
						t.Fatalf("line %d: place %q, want 16 hex characters", l.NewLine, p)
					}
					if q := y.place(l.NewLine + int(shift) + 1); q != p {
						t.Fatalf("line %d: place %q, %q once moved down by %d", l.NewLine, p, q, int(shift)+1)
					}
					if p == "" {
						continue
					}
					a := lineAnchor(l.Text)
					if byText[a] == nil {
						byText[a] = map[string]int{}
					}
					if other, ok := byText[a][p]; ok && other != l.NewLine {
						t.Fatalf("lines %d and %d, same text, share the place %s", other, l.NewLine, p)
					}
					byText[a][p] = l.NewLine
				}
			}
		}
	})
}

// shifted is f with every new line number moved down by n: n lines
// inserted above its first hunk, outside the diff.
func shifted(f diff.File, n int) diff.File {
	f.Hunks = append([]diff.Hunk(nil), f.Hunks...)
	for i := range f.Hunks {
		h := &f.Hunks[i]
		h.NewStart += n
		h.Lines = append([]diff.Line(nil), h.Lines...)
		for j := range h.Lines {
			if h.Lines[j].Kind != diff.Removed {
				h.Lines[j].NewLine += n
			}
		}
	}
	return f
}
