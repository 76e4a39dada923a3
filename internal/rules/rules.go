// Package rules reads docs/rules.md — every rule Criticizer keeps, with a
// stable id — and the Go sources that cite the rules, so that a test can
// hold the two together: every cited id exists, every rule is proved by a
// test, the document's lists of tests are current, and no source cites an
// outside document instead of an id. cmd/rules rewrites the lists.
package rules

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// IDPattern matches a rule id: R-<AREA>-<number>.
var IDPattern = regexp.MustCompile(`\bR-[A-Z]+-[0-9]+\b`)

var heading = regexp.MustCompile(`^### (R-[A-Z]+-[0-9]+)\b`)

// provedPrefix starts the generated line under each rule.
const provedPrefix = "Proved by: "

// Rule is one rule of the document.
type Rule struct {
	ID      string
	Retired bool
	// Proved lists the tests the document names, as written.
	Proved []string
}

// Doc is the parsed document.
type Doc struct {
	Rules []Rule
	lines []string
}

// Parse reads the document.
func Parse(b []byte) (*Doc, error) {
	d := &Doc{lines: strings.Split(string(b), "\n")}
	seen := map[string]bool{}
	for _, line := range d.lines {
		if m := heading.FindStringSubmatch(line); m != nil {
			if seen[m[1]] {
				return nil, fmt.Errorf("rule %s appears twice", m[1])
			}
			seen[m[1]] = true
			d.Rules = append(d.Rules, Rule{ID: m[1], Retired: strings.Contains(line, "*retired*")})
			continue
		}
		if rest, ok := strings.CutPrefix(line, provedPrefix); ok && len(d.Rules) > 0 {
			r := &d.Rules[len(d.Rules)-1]
			for _, t := range strings.Split(rest, ",") {
				if t = strings.Trim(strings.TrimSpace(t), "`."); t != "" {
					r.Proved = append(r.Proved, t)
				}
			}
		}
	}
	return d, nil
}

// IDs returns the set of ids.
func (d *Doc) IDs() map[string]bool {
	m := map[string]bool{}
	for _, r := range d.Rules {
		m[r.ID] = true
	}
	return m
}

// WithProved returns the document with each rule's "Proved by" line set to
// the tests given (sorted), replacing any there was.
func (d *Doc) WithProved(tests map[string][]string) []byte {
	var out []string
	current := ""
	flush := func() {
		if current == "" {
			return
		}
		if ts := tests[current]; len(ts) > 0 {
			quoted := make([]string, len(ts))
			for i, t := range ts {
				quoted[i] = "`" + t + "`"
			}
			// The paragraph ends with the owner line; the tests follow it.
			for len(out) > 0 && out[len(out)-1] == "" {
				out = out[:len(out)-1]
			}
			out = append(out, provedPrefix+strings.Join(quoted, ", ")+".", "")
		}
		current = ""
	}
	for _, line := range d.lines {
		if strings.HasPrefix(line, provedPrefix) {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil || strings.HasPrefix(line, "## ") {
			flush()
			if m != nil {
				current = m[1]
			}
		}
		out = append(out, line)
	}
	flush()
	b := strings.Join(out, "\n")
	return []byte(strings.TrimRight(b, "\n") + "\n")
}

// Citation is an id cited in a Go source.
type Citation struct {
	ID   string
	File string
	Line int
}

// Sources is what the Go files of a tree say about the rules.
type Sources struct {
	// Cited lists every rule id found in a Go file.
	Cited []Citation
	// Tests maps a rule id to the tests (Test, Fuzz, Example functions)
	// whose doc comment cites it.
	Tests map[string][]string
	// Outside lists citations of documents outside the repository.
	Outside []Citation
}

// outside are the forms a citation of a document outside the repository
// takes (the specifications the rules were drawn from, issues, plans).
// A section sign after an RFC's number ("RFC 8058 §3.1") cites a public
// standard, not one of those documents.
var (
	outside    = regexp.MustCompile(`\b[Ss]eeds?\s*0\d\d|§\s?\d|\b[Ii]ssue\s?#?\d+|\bPhase\s?\d+|design map|DESIGN\.md|critical test \d+|[A-Za-z]_00\d_`)
	rfcSection = regexp.MustCompile(`RFC\s?\d+\s?§\s?\d`)
)

// outsideIn is the first citation of an outside document in line, if any.
func outsideIn(line string) string {
	return outside.FindString(rfcSection.ReplaceAllString(line, "RFC"))
}

// Scan reads every Go file under root, skipping vendored, generated and
// node_modules trees.
func Scan(root string) (*Sources, error) {
	s := &Sources{Tests: map[string][]string{}}
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			switch de.Name() {
			case "node_modules", "vendor", ".git", "cdk.out", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(de.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return s.file(root, path)
	})
	for id := range s.Tests {
		sort.Strings(s.Tests[id])
		s.Tests[id] = slices.Compact(s.Tests[id])
	}
	return s, err
}

func (s *Sources) file(root, path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(root, path)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, id := range IDPattern.FindAllString(line, -1) {
			s.Cited = append(s.Cited, Citation{ID: id, File: rel, Line: n})
		}
		if m := outsideIn(line); m != "" && !strings.HasPrefix(filepath.ToSlash(rel), "internal/rules/") {
			s.Outside = append(s.Outside, Citation{ID: m, File: rel, Line: n})
		}
	}
	if !strings.HasSuffix(path, "_test.go") {
		return nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Doc == nil {
			continue
		}
		name := fn.Name.Name
		if !strings.HasPrefix(name, "Test") && !strings.HasPrefix(name, "Fuzz") && !strings.HasPrefix(name, "Example") {
			continue
		}
		for _, id := range IDPattern.FindAllString(fn.Doc.Text(), -1) {
			s.Tests[id] = append(s.Tests[id], name)
		}
	}
	return nil
}
