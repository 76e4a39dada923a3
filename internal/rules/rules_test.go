package rules_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/criticizer/criticizer/internal/rules"
)

// The repository keeps its rules in docs/rules.md and cites them by id:
// every id cited exists, every live rule is proved by at least one test
// whose doc comment cites it, the document's "Proved by" lists are current
// (make rules), and no Go file cites an outside document instead of an id.
func TestRules_Citations(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := rules.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	src, err := rules.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	ids := doc.IDs()
	for _, c := range src.Cited {
		if !ids[c.ID] {
			t.Errorf("%s:%d cites %s, which docs/rules.md does not define", c.File, c.Line, c.ID)
		}
	}
	for _, r := range doc.Rules {
		if !r.Retired && len(src.Tests[r.ID]) == 0 {
			t.Errorf("%s has no test: no test's doc comment cites it", r.ID)
		}
		if want := src.Tests[r.ID]; !slices.Equal(r.Proved, want) && !r.Retired {
			t.Errorf("%s: docs/rules.md lists %v, the tests citing it are %v: run make rules", r.ID, r.Proved, want)
		}
	}
	for _, c := range src.Outside {
		t.Errorf("%s:%d cites an outside document (%q): cite a rule id from docs/rules.md", c.File, c.Line, c.ID)
	}
	if fresh := doc.WithProved(src.Tests); !bytes.Equal(fresh, b) {
		t.Error("docs/rules.md is not what make rules writes: run make rules")
	}
}
