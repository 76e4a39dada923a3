package critic

import (
	"iter"
	"path"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
)

// language is the programming language a file is written in, as far as the
// language-specific rules care.
type language uint8

const (
	langOther language = iota
	langGo
	langJS // JavaScript and TypeScript and their framework variants
	langPython
	langRuby
)

// changedFile is a diff.File plus what the rules need to know about it,
// worked out once so each rule does not re-derive it.
type changedFile struct {
	file    *diff.File
	path    string // real path, used for classification only
	display string // path as shown in findings; see displayPath
	lang    language

	source    bool // production-style source code (a test is expected to accompany changes)
	test      bool // test code or test data
	generated bool // machine-written, as the base or the deployment says (R-CRITIC-7): lock files, generated code
	vendored  bool // vendored, as the base says: under vendor/, node_modules/, third_party/…
	claimed   bool // says it is generated, but neither the base nor the deployment does: reviewed, last
	prose     bool // documentation, where long lines and trailing spaces are normal
	data      bool // data or markup, where long lines are normal

	additions, deletions int
}

// classify works out what a file is. Whether it is machine-written is
// the base's and the deployment's word (pv), never the change's alone
// (machineWritten).
func classify(f *diff.File, pv provenance) *changedFile {
	p := f.Path()
	base := path.Base(p)
	ext := strings.ToLower(path.Ext(base))
	cf := &changedFile{
		file:    f,
		path:    p,
		display: displayPath(p),
		lang:    languages[ext],
	}
	cf.source = sourceExts[ext]
	cf.test = isTestPath(p, base)
	gen, ven, claimed := machineWritten(f, pv)
	cf.generated, cf.vendored, cf.claimed = gen || ven, ven, claimed
	cf.prose = proseExts[ext]
	cf.data = dataExts[ext] || strings.Contains(base, ".min.")
	for i := range f.Hunks {
		for _, l := range f.Hunks[i].Lines {
			switch l.Kind {
			case diff.Added:
				cf.additions++
			case diff.Removed:
				cf.deletions++
			}
		}
	}
	return cf
}

// addedLines yields the file's added lines in order. Rules look at added
// lines only: that is the code under review.
func (f *changedFile) addedLines() iter.Seq[*diff.Line] {
	return func(yield func(*diff.Line) bool) {
		for i := range f.file.Hunks {
			lines := f.file.Hunks[i].Lines
			for j := range lines {
				if lines[j].Kind == diff.Added && !yield(&lines[j]) {
					return
				}
			}
		}
	}
}

var languages = map[string]language{
	".go":     langGo,
	".js":     langJS,
	".jsx":    langJS,
	".mjs":    langJS,
	".cjs":    langJS,
	".ts":     langJS,
	".tsx":    langJS,
	".mts":    langJS,
	".cts":    langJS,
	".vue":    langJS,
	".svelte": langJS,
	".py":     langPython,
	".rb":     langRuby,
	".rake":   langRuby,
	".erb":    langRuby,
}

// sourceExts are languages where a behaviour change is expected to come
// with a test change.
var sourceExts = setOf(
	".go", ".py", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
	".java", ".kt", ".kts", ".scala", ".rb", ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp",
	".cs", ".php", ".swift", ".m", ".mm", ".ex", ".exs", ".clj", ".dart",
)

var proseExts = setOf(".md", ".markdown", ".rst", ".adoc", ".txt", ".tex", ".org")

var dataExts = setOf(
	".json", ".csv", ".tsv", ".svg", ".xml", ".lock", ".map", ".snap", ".pem", ".crt",
	".diff", ".patch", ".golden", ".ipynb", ".sum",
)

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// testDirs are path segments under which everything is test code or data.
var testDirs = setOf("test", "tests", "__tests__", "spec", "specs", "testdata", "e2e", "fixtures")

// isTestPath recognises test files by the conventions of common languages:
// Go's _test.go, pytest's test_*.py and *_test.py, Jest/Vitest/Mocha's
// *.test.* and *.spec.*, JUnit's *Test.java, RSpec's *_spec.rb, and test
// directories.
func isTestPath(p, base string) bool {
	lower := strings.ToLower(base)
	switch {
	case strings.HasSuffix(lower, "_test.go"),
		strings.HasSuffix(lower, ".py") && (strings.HasPrefix(lower, "test_") || strings.HasSuffix(lower, "_test.py")),
		lower == "conftest.py",
		strings.Contains(lower, ".test."), strings.Contains(lower, ".spec."),
		strings.HasSuffix(lower, "_spec.rb"), strings.HasSuffix(lower, "_test.rb"):
		return true
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	if sourceExts[strings.ToLower(path.Ext(base))] &&
		(strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasSuffix(stem, "Spec")) {
		return true
	}
	for seg := range strings.SplitSeq(path.Dir(p), "/") {
		if testDirs[strings.ToLower(seg)] {
			return true
		}
	}
	return false
}

// lockFiles are written by package managers, never by hand.
var lockFiles = setOf(
	"go.sum", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
	"Cargo.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "Gemfile.lock", "composer.lock",
	"mix.lock", "pubspec.lock", "Podfile.lock", "flake.lock",
)

var vendorDirs = setOf("vendor", "node_modules", "third_party", "bower_components")

// isGeneratedPath recognises the names machine-written files take. A name
// is the file's own claim: it counts only when the base had the file under
// such a name (machineWritten). Style and size rules skip generated
// files: nobody reviews a lock file line by line.
func isGeneratedPath(p, base string) bool {
	if lockFiles[base] {
		return true
	}
	for _, suffix := range []string{".pb.go", "_gen.go", ".gen.go", "_generated.go", ".pb.ts", "_pb2.py", ".min.js", ".min.css", ".g.dart"} {
		if strings.HasSuffix(base, suffix) {
			return true
		}
	}
	for seg := range strings.SplitSeq(path.Dir(p), "/") {
		if vendorDirs[seg] {
			return true
		}
	}
	return false
}
