package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// Every mutation still applies to the code: its target text is found
// exactly once in its file, and the mutated file still parses. The code
// moves on; the list must follow it, or make mutate would measure
// nothing (it fails on a mutation that does not apply, too). The stores'
// conditions are mutated on both drivers, every contract.
// Rules: R-STORE-3.
func TestMutations_ApplyToTheCode(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ms := allMutations()
	if len(ms) < 55 {
		t.Errorf("%d mutations, want at least 55", len(ms))
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.ID] {
			t.Errorf("mutation %s listed twice", m.ID)
		}
		seen[m.ID] = true
		for _, c := range m.Checks {
			if _, err := selectChecks(c); err != nil {
				t.Errorf("mutation %s: %v", m.ID, err)
			}
		}
		if m.What == "" {
			t.Errorf("mutation %s does not say what it breaks", m.ID)
		}
		src, err := m.Apply(root)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), m.File, src, parser.SkipObjectResolution); err != nil {
			t.Errorf("mutation %s does not parse: %v", m.ID, err)
		}
	}
}
