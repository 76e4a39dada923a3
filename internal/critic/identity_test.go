package critic

import "testing"

// A finding's identity across versions: the same when the model rewords
// it or lines above move it, another when its line's text, its rule or
// its file changes; without a line text, its number decides.
// Rules: R-VOTE-3.
func TestSameKey_LineTextRuleAndFile(t *testing.T) {
	f := Finding{File: "a.go", Line: 10, Rule: "debug-print", Message: "fmt.Println left in.", Anchor: "0123abcd"}
	same := f
	same.Line, same.Message, same.Severity, same.New = 14, "Debug output in the hot path.", SeverityError, true
	if SameKey(f) != SameKey(same) {
		t.Error("moved and reworded: another key")
	}
	for name, g := range map[string]Finding{
		"line text": {File: "a.go", Line: 10, Rule: "debug-print", Anchor: "ffff0000"},
		"rule":      {File: "a.go", Line: 10, Rule: "todo-added", Anchor: "0123abcd"},
		"file":      {File: "b.go", Line: 10, Rule: "debug-print", Anchor: "0123abcd"},
		"no anchor": {File: "a.go", Line: 10, Rule: "debug-print"},
	} {
		if SameKey(g) == SameKey(f) {
			t.Errorf("%s changed: same key", name)
		}
	}
	a, b := Finding{File: "a.go", Line: 3, Rule: "r"}, Finding{File: "a.go", Line: 4, Rule: "r"}
	if SameKey(a) == SameKey(b) || SameKey(a) != SameKey(Finding{File: "a.go", Line: 3, Rule: "r", Message: "x"}) {
		t.Error("without an anchor the line number is the identity")
	}
}
