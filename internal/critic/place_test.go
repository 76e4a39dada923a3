package critic

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
)

// goFile is a Go file of package a importing fmt, with the functions
// given, one blank line between them.
func goFile(funcs ...[]string) []string {
	lines := []string{"package a", "", `import "fmt"`}
	for _, f := range funcs {
		lines = append(append(lines, ""), f...)
	}
	return lines
}

var (
	totalFunc  = []string{"func Total(sum int) int {", `	fmt.Println("total", sum)`, "	return sum", "}"}
	refundFunc = []string{"func Refund(sum int) int {", `	fmt.Println("total", sum)`, "	return -sum", "}"}
)

// A Place is a digest of the nearest non-blank lines around a line in
// its hunk, as few as tell it from the other lines of the same text:
// the hunk's edge counts as "none", and lines of another hunk are not
// neighbours. It is 16 hex characters: no source.
// Rules: R-VOTE-3.
func TestPlace_NeighboursInTheHunk(t *testing.T) {
	d := "diff --git a/c.go b/c.go\nindex 1..2 100644\n--- a/c.go\n+++ b/c.go\n" +
		"@@ -1,2 +1,3 @@\n x()\n+\tdbg()\n y()\n" +
		"@@ -10,2 +11,3 @@\n x()\n+\tdbg()\n z()\n" +
		"@@ -20,1 +22,2 @@\n+dbg()\n w()\n"
	x := placeIndexOf(t, d, "c.go")
	p2, p12, p22 := x.place(2), x.place(12), x.place(22)
	if len(p2) != 16 || strings.Trim(p2, "0123456789abcdef") != "" {
		t.Fatalf("place %q, want 16 hex characters", p2)
	}
	if p2 == p12 || p2 == p22 || p12 == p22 || p22 == "" {
		t.Errorf("three dbg() with other neighbours: places %q %q %q, want three", p2, p12, p22)
	}
	if x.place(99) != "" || x.place(5) != "" {
		t.Error("a line the diff does not show has a place")
	}
	// A finding still open is put on the line of its text at its place,
	// else on the first line of its text.
	a := lineAnchor("dbg()")
	if got := []int{x.lineOf(a, p12), x.lineOf(a, p22), x.lineOf(a, "0000000000000000"), x.lineOf(lineAnchor("nope"), p2)}; got[0] != 12 || got[1] != 22 || got[2] != 2 || got[3] != 0 {
		t.Errorf("lineOf: %v, want 12, 22, 2 (the first), 0", got)
	}
}

func placeIndexOf(t *testing.T, diffText, path string) *placeIndex {
	t.Helper()
	d, err := diff.ParseString(diffText)
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Files {
		if d.Files[i].Path() == path {
			return newPlaceIndex(&d.Files[i])
		}
	}
	t.Fatalf("no %s in the diff", path)
	return nil
}

// Of two findings on lines with the same text, the comparison of versions
// calls unchanged the one where the earlier version's line stands (its
// Place) and new the copy, even when the copy comes first: an email that
// called the copy unchanged and the original new would show a reader who
// marked the original wrong an "unchanged" copy and nothing new
// (R-VOTE-3, R-QUIET-2).
// Rules: R-VOTE-3, R-MAIL-3.
func TestIncremental_CopyOfAFlaggedLineIsTheNewFinding(t *testing.T) {
	ic := NewIncremental(NewOffline())
	v1 := rerun(t, ic, 1, addFile("a.go", goFile(totalFunc)...), nil, 0)
	v2 := rerun(t, ic, 2, addFile("a.go", goFile(refundFunc, totalFunc)...), &v1, 1)
	got := map[int]bool{}
	for _, f := range findingsOn(v2, "a.go") {
		if f.Rule == RuleDebugPrint {
			got[f.Line] = f.New
		}
	}
	if len(got) != 2 || !got[6] || got[11] {
		t.Errorf("v2's prints, line → new: %v; want the copy on line 6 new and line 11 (v1's line 6) unchanged", got)
	}
}
