package critic

import (
	"context"
	"fmt"
	"testing"
)

// keysOf reviews diffText with the offline critic as Incremental does
// (which records each flagged line's text and place) and returns the
// SameKey of each debug-print finding on path, by line.
func keysOf(t *testing.T, diffText, path string) map[int]string {
	t.Helper()
	c, err := NewIncremental(NewOffline()).Review(context.Background(), Input{ChangelistID: "acme/app#7", ReviewVersion: 1, Diff: diffText})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, f := range c.Findings {
		if f.File == path && f.Rule == RuleDebugPrint {
			out[f.Line] = SameKey(f)
		}
	}
	return out
}

// A reader's mark is on the line they saw: a line with the same text in
// another function of the same file is another finding, with another
// key, whichever order the two stand in.
// Rules: R-VOTE-3.
func TestSameKey_SameTextElsewhere_AnotherKey(t *testing.T) {
	for name, funcs := range map[string][][]string{
		"copy below": {totalFunc, refundFunc},
		"copy above": {refundFunc, totalFunc},
	} {
		t.Run(name, func(t *testing.T) {
			keys := keysOf(t, addFile("a.go", goFile(funcs...)...), "a.go")
			if len(keys) != 2 {
				t.Fatalf("debug findings by line %v, want the two prints", keys)
			}
			seen := map[string]bool{}
			for line, k := range keys {
				if k == "" || seen[k] {
					t.Errorf("the print on line %d: key %q, want one of its own (%v)", line, k, keys)
				}
				seen[k] = true
			}
		})
	}
}

// The mark follows its line when lines above it move: a function added
// above (holding a copy of the same line) leaves the key of the line the
// reader saw where that line now is, and gives the copy another one. So
// does a hunk of its own above it in a file with context lines, and a
// blank line added right beside it.
// Rules: R-VOTE-3.
func TestSameKey_LinesInsertedAbove_FollowsTheLine(t *testing.T) {
	v1 := keysOf(t, addFile("a.go", goFile(totalFunc)...), "a.go")
	if len(v1) != 1 || v1[6] == "" {
		t.Fatalf("v1's debug findings %v, want one with a key on line 6", v1)
	}
	v2 := keysOf(t, addFile("a.go", goFile(refundFunc, totalFunc)...), "a.go")
	if v2[11] != v1[6] || v2[6] == v1[6] || len(v2) != 2 {
		t.Errorf("after a function added above: keys %v, want line 11 (the line the reader saw) to keep v1's %s and line 6 (the copy) another", v2, v1[6])
	}

	// An existing file: the print added among context lines; v2 also adds
	// four lines near the top, one a copy of the print in another place.
	hunk := func(newStart int) string {
		return fmt.Sprintf("@@ -20,6 +%d,7 @@ func Load() {\n \tcfg := read()\n \tif cfg == nil {\n \t\treturn nil\n+\tfmt.Println(\"cfg\", cfg)\n \t}\n \tapply(cfg)\n \treturn cfg\n", newStart)
	}
	head := "diff --git a/b.go b/b.go\nindex 1111111..2222222 100644\n--- a/b.go\n+++ b/b.go\n"
	top := "@@ -3,3 +3,7 @@ import \"fmt\"\n \n func init() {\n+\tcfg := read()\n+\tfmt.Println(\"cfg\", cfg)\n+\tvalidate(cfg)\n+\n \tregister()\n"
	c1 := keysOf(t, head+hunk(20), "b.go")
	c2 := keysOf(t, head+top+hunk(24), "b.go")
	if c1[23] == "" || c2[27] != c1[23] || c2[6] == "" || c2[6] == c1[23] {
		t.Errorf("context diff: v1 %v, v2 %v; want v2's line 27 to keep v1's line 23 key and line 6 another", c1, c2)
	}

	// A blank line added right above the print does not move it.
	blank := []string{"func Total(sum int) int {", "", `	fmt.Println("total", sum)`, "	return sum", "}"}
	if v3 := keysOf(t, addFile("a.go", goFile(blank)...), "a.go"); v3[7] != v1[6] {
		t.Errorf("a blank line above: keys %v, want line 7 to keep %s", v3, v1[6])
	}
}

// An edit to the flagged line makes it another finding, shown again —
// also when a line with its old text appears in another function.
// Rules: R-VOTE-3.
func TestSameKey_LineTextChanged_AnotherKey(t *testing.T) {
	v1 := keysOf(t, addFile("a.go", goFile(totalFunc)...), "a.go")
	edited := []string{"func Total(sum int) int {", `	fmt.Println("sum is", sum)`, "	return sum", "}"}
	v2 := keysOf(t, addFile("a.go", goFile(edited, refundFunc)...), "a.go")
	if len(v2) != 2 {
		t.Fatalf("v2's debug findings %v, want two", v2)
	}
	for line, k := range v2 {
		if k == v1[6] {
			t.Errorf("v2's print on line %d has the key of v1's line 6 (%s): the edited line, or the old text in another function, would stay hidden", line, k)
		}
	}
}

// Without the line's text there is nothing to follow a finding by: a
// critique made without Incremental (no Anchor), a whole-file finding,
// and a line whose neighbours cannot tell it from a copy have no key, so
// no mark is kept and nothing is hidden — never the code that comes to
// stand at a line number. The model's words and the severity are never
// part of a key; the rule and the file are.
// Rules: R-VOTE-3.
func TestSameKey_NoLineText_NoKey(t *testing.T) {
	plain := review(t, addFile("a.go", goFile(totalFunc)...))
	for _, f := range plain.Findings {
		if k := SameKey(f); k != "" {
			t.Errorf("%s on line %d of a critique without line text: key %q, want none", f.Rule, f.Line, k)
		}
	}
	f := Finding{File: "a.go", Line: 10, Rule: "debug-print", Message: "fmt.Println left in.", Anchor: "0123abcd", Place: "89ab0123cdef4567"}
	for name, g := range map[string]Finding{
		"whole file": {File: "a.go", Rule: "file-too-large"},
		"no anchor":  {File: "a.go", Line: 10, Rule: "debug-print", Place: f.Place},
		"no place":   {File: "a.go", Line: 10, Rule: "debug-print", Anchor: f.Anchor},
	} {
		if k := SameKey(g); k != "" {
			t.Errorf("%s: key %q, want none", name, k)
		}
	}
	same := f
	same.Line, same.Message, same.Severity, same.New = 14, "Debug output in the hot path.", SeverityError, true
	if SameKey(f) == "" || SameKey(f) != SameKey(same) {
		t.Error("moved and reworded: another key")
	}
	for name, g := range map[string]Finding{"rule": {Rule: "todo-added"}, "file": {File: "b.go"}} {
		h := f
		h.Rule, h.File = cmpOr(g.Rule, f.Rule), cmpOr(g.File, f.File)
		if SameKey(h) == SameKey(f) {
			t.Errorf("%s changed: same key", name)
		}
	}

	// A block copied whole: its print's three lines either side are the
	// copy's, so neither has a place, nor a key.
	block := []string{"func Total(sum int) int {", "	a := 1", "	b := 2", `	fmt.Println("total", sum)`, "	c := 3", "	d := 4", "	return sum", "}"}
	copied := keysOf(t, addFile("a.go", goFile(block, block)...), "a.go")
	if len(copied) != 2 || copied[7] != "" || copied[16] != "" {
		t.Errorf("two copies of one block: keys %v, want none", copied)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
