package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/docs"
)

// MaxREADMELines is the README's budget: a front page, not a manual;
// everything else lives under docs/.
const MaxREADMELines = 300

func load(t *testing.T) (string, []docs.Page) {
	t.Helper()
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := docs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, pages
}

// The README is a front page: at most MaxREADMELines lines, and a map to
// every page under docs/.
func TestREADME_IsAFrontPageLinkingEveryPage(t *testing.T) {
	_, pages := load(t)
	readme := pages[0]
	if readme.Path != "README.md" {
		t.Fatalf("first page is %s", readme.Path)
	}
	if n := len(readme.Lines); n > MaxREADMELines {
		t.Errorf("README.md has %d lines; at most %d: move the detail to a page under docs/ and link it", n, MaxREADMELines)
	}
	linked := map[string]bool{}
	for _, l := range readme.Links() {
		target, _, _ := strings.Cut(l.Target, "#")
		linked[path.Clean(target)] = true
	}
	for _, p := range pages[1:] {
		if strings.HasPrefix(p.Path, "docs/") && !linked[p.Path] {
			t.Errorf("README.md does not link %s: add it to \"Where to go next\"", p.Path)
		}
	}
}

// Every relative link of the README and the docs pages names a file that
// exists, and an anchor its Markdown target has.
func TestLinks_EveryRelativeLinkResolves(t *testing.T) {
	root, pages := load(t)
	byPath := map[string]docs.Page{}
	for _, p := range pages {
		byPath[p.Path] = p
	}
	n := 0
	for _, p := range pages {
		for _, l := range p.Links() {
			n++
			file, anchor, _ := strings.Cut(l.Target, "#")
			target := p.Path
			if file != "" {
				target = path.Clean(path.Join(path.Dir(p.Path), file))
			}
			if strings.HasPrefix(target, "../") {
				t.Errorf("%s:%d: link %q leaves the repository", l.Page, l.Line, l.Target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s:%d: link %q: no file %s", l.Page, l.Line, l.Target, target)
				continue
			}
			if anchor == "" {
				continue
			}
			tp, ok := byPath[target]
			if !ok {
				if !strings.HasSuffix(target, ".md") {
					t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", l.Page, l.Line, l.Target)
					continue
				}
				b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(target)))
				if err != nil {
					t.Fatal(err)
				}
				tp = docs.Page{Path: target, Lines: strings.Split(string(b), "\n")}
			}
			if !tp.Anchors()[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", l.Page, l.Line, l.Target, target, anchor)
			}
		}
	}
	if n == 0 {
		t.Fatal("no links found: the reader is broken")
	}
}

// placeholder reports whether a command shows a placeholder (<id>,
// WORD…) rather than something to run as written.
func placeholder(words []string) bool {
	for _, w := range words {
		if placeholderRE.MatchString(w) {
			return true
		}
	}
	return false
}

// placeholderRE matches <id>, <delivery_id>, <Target> or an ellipsis, not
// an address such as "Name <critic@example.org>".
var placeholderRE = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_ -]*>|…`)

// Every `make …` the pages show, in a shell block or in prose, names a
// real target with the variables as written: `make -n` (print, run
// nothing) accepts it and has something to do.
func TestCommands_MakeNamesRealTargets(t *testing.T) {
	root, pages := load(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	seen := map[string]bool{}
	for _, p := range pages {
		for _, c := range p.Commands("make") {
			argv, err := c.Argv()
			if err != nil {
				t.Errorf("%s:%d: %v", c.Page, c.Line, err)
				continue
			}
			if len(argv) == 0 || argv[0] != "make" {
				continue
			}
			if placeholder(argv) {
				t.Logf("%s:%d: %q shows a placeholder; its target pattern is not checked", c.Page, c.Line, c.Text)
				continue
			}
			key := c.Dir + "\x00" + strings.Join(argv, "\x00")
			if seen[key] {
				continue
			}
			seen[key] = true
			cmd := exec.Command("make", append([]string{"-n"}, argv[1:]...)...)
			cmd.Dir = filepath.Join(root, filepath.FromSlash(c.Dir))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s:%d: %q: make -n fails: %v\n%s", c.Page, c.Line, c.Text, err, out)
				continue
			}
			if strings.Contains(string(out), "Nothing to be done for") {
				t.Errorf("%s:%d: %q: the target has no recipe:\n%s", c.Page, c.Line, c.Text, out)
			}
		}
	}
	if len(seen) < 5 {
		t.Fatalf("only %d make commands found: the reader is broken", len(seen))
	}
}

// topLevel lists the repository's top-level entries, so a word such as
// "events/x.json" or "internal/mail" is recognised as a path.
func topLevel(t *testing.T, root string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out[e.Name()] = true
		}
	}
	return out
}

// repoPath returns the repository path a word names, if it names one: a
// "./…" or "@…" word, or one whose first segment is a top-level entry.
func repoPath(word string, top map[string]bool, command bool) (string, bool) {
	w := word
	if strings.HasPrefix(word, "@") {
		if !command {
			return "", false // an npm scope, or a variable's @/path.json form
		}
		w = word[1:]
	}
	if strings.ContainsAny(w, "<>*{}…$") || strings.Contains(w, "://") {
		return "", false
	}
	w = strings.TrimSuffix(strings.TrimSuffix(w, "/..."), "...")
	switch {
	case w == "" || w == ".":
		return "", false
	case strings.HasPrefix(w, "./"):
		return path.Clean(w), true
	case strings.HasPrefix(word, "@"):
		return path.Clean(w), true
	}
	first, _, ok := strings.Cut(w, "/")
	if !ok || !top[first] {
		return "", false
	}
	// A Go qualified identifier, internal/cost.ReviewMachine: the package.
	if m := goIdent.FindStringIndex(w); m != nil {
		w = w[:m[0]]
	}
	return path.Clean(w), true
}

var goIdent = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*$`)

// Every file and package path the pages name — in commands, and in prose
// code spans such as `events/generic-webhook.json` — exists.
func TestCommands_PathsExist(t *testing.T) {
	root, pages := load(t)
	top := topLevel(t, root)
	n := 0
	check := func(where, dir, word string, command bool) {
		p, ok := repoPath(word, top, command)
		if !ok {
			return
		}
		n++
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir), filepath.FromSlash(p))); err != nil {
			t.Errorf("%s: %s names %s, which does not exist (from %s)", where, word, path.Join(dir, p), dir)
		}
	}
	for _, p := range pages {
		for _, c := range p.Commands() {
			words, err := docs.Words(c.Text)
			if err != nil {
				t.Errorf("%s:%d: %v", c.Page, c.Line, err)
				continue
			}
			for _, w := range words {
				check(c.Page+":"+strconv.Itoa(c.Line), c.Dir, w, !c.Inline)
			}
		}
		for _, span := range p.Spans() {
			for _, w := range strings.Fields(span.Text) {
				check(p.Path+":"+strconv.Itoa(span.Line), ".", strings.Trim(w, "(),;:"), false)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d paths found: the reader is broken", n)
	}
}

// spans returns a line's single-backtick code spans (prose and tables).
func spans(line string) []string {
	var out []string
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// testFuncs are the test functions declared in a package directory.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var out []string
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// A `go test … -run X ./pkg` the pages show selects at least one test of
// that package (a renamed test would otherwise make it run nothing, and
// pass).
func TestCommands_GoTestRunSelectsATest(t *testing.T) {
	root, pages := load(t)
	n := 0
	for _, p := range pages {
		for _, c := range p.Commands("go", "CRITICIZER_SCREENSHOT_DIR=/tmp/shots") {
			// `devstack exec -- go test …` runs a go test too.
			text := c.Text
			if _, after, ok := strings.Cut(text, " -- "); ok {
				text = after
			}
			words, err := docs.Words(withoutEnv(text))
			if err != nil || len(words) < 2 || words[0] != "go" || words[1] != "test" {
				continue
			}
			run, pkgs := "", []string{}
			for i := 2; i < len(words); i++ {
				switch {
				case words[i] == "-run" && i+1 < len(words):
					run = words[i+1]
					i++
				case strings.HasPrefix(words[i], "-run="):
					run = strings.TrimPrefix(words[i], "-run=")
				case strings.HasPrefix(words[i], "./") && !strings.HasSuffix(words[i], "..."):
					pkgs = append(pkgs, words[i])
				}
			}
			if run == "" || run == "^$" || placeholder(words) {
				continue
			}
			re, err := regexp.Compile(run)
			if err != nil {
				t.Errorf("%s:%d: -run %q: %v", c.Page, c.Line, run, err)
				continue
			}
			for _, pkg := range pkgs {
				n++
				if !slices.ContainsFunc(testFuncs(t, filepath.Join(root, filepath.FromSlash(c.Dir), pkg)), re.MatchString) {
					t.Errorf("%s:%d: %q: -run %s selects no test of %s", c.Page, c.Line, c.Text, run, pkg)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no go test -run commands found: the reader is broken")
	}
}

var envPrefix = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+`)

func withoutEnv(s string) string { return envPrefix.ReplaceAllString(strings.TrimSpace(s), "") }

// readVariables are the variables config.FromEnv and EndpointsFromEnv
// read, recorded as they ask for them.
func readVariables(t *testing.T) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return "" }
	if _, err := config.FromEnv(getenv); err != nil {
		t.Fatalf("config.FromEnv with nothing set: %v", err)
	}
	config.EndpointsFromEnv(getenv)
	return read
}

// declaredVariables are the values of internal/config's Env* string
// constants: the names it declares, read there or elsewhere.
func declaredVariables(t *testing.T, root string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "internal", "config", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Env") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = true
					}
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d Env constants in internal/config: the parser is broken", len(out))
	}
	return out
}

// sourceVariables are the CRITICIZER_* names quoted in the module's Go
// files: the variables tools and tests read (CRITICIZER_STACK,
// CRITICIZER_REQUIRE_STACK…).
func sourceVariables(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	quoted := regexp.MustCompile(`"(CRITICIZER_[A-Z0-9_]*[A-Z0-9])[="]`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var variableRE = regexp.MustCompile(`\b(CRITICIZER_[A-Z0-9_]*[A-Z0-9]|AWS_ENDPOINT_URL(?:_[A-Z0-9_]*[A-Z0-9])?|LOG_LEVEL)\b`)

// Every environment variable the pages name is one the code reads:
// internal/config's (read or declared), or one a tool or test reads.
func TestVariables_EveryNamedVariableExists(t *testing.T) {
	root, pages := load(t)
	known := readVariables(t)
	for k := range declaredVariables(t, root) {
		known[k] = true
	}
	for k := range sourceVariables(t, root) {
		known[k] = true
	}
	n := 0
	for _, p := range pages {
		for i, line := range p.Lines {
			for _, v := range variableRE.FindAllString(line, -1) {
				n++
				if !known[v] {
					t.Errorf("%s:%d: names %s, which nothing in the code reads", p.Path, i+1, v)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d variables named: the reader is broken", n)
	}
}

// row is one row of configuration.md's variables table.
type row struct {
	line     int
	names    []string
	defaults []string // one per name, or one for all
}

// variablesTable parses docs/configuration.md's table under "## Variables".
func variablesTable(t *testing.T, pages []docs.Page) []row {
	t.Helper()
	var cfg *docs.Page
	for i := range pages {
		if pages[i].Path == "docs/configuration.md" {
			cfg = &pages[i]
		}
	}
	if cfg == nil {
		t.Fatal("no docs/configuration.md")
	}
	var rows []row
	in := false
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	for i, line := range cfg.Lines {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Variables"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Fatalf("docs/configuration.md:%d: want | variable | default | used by | meaning |", i+1)
		}
		r := row{line: i + 1}
		for _, m := range name.FindAllStringSubmatch(cells[0], -1) {
			r.names = append(r.names, m[1])
		}
		r.defaults = strings.Split(cells[1], ", ")
		if len(r.defaults) != len(r.names) {
			r.defaults = []string{cells[1]}
		}
		rows = append(rows, r)
	}
	return rows
}

// defaultValue is a default cell's value: its first code span, or "" for
// "none…"/"unset…".
func defaultValue(cell string) string {
	cell = strings.TrimSpace(cell)
	if strings.HasPrefix(cell, "none") || strings.HasPrefix(cell, "unset") {
		return ""
	}
	if s := spans(cell); len(s) > 0 && strings.HasPrefix(cell, "`") {
		return s[0]
	}
	return cell
}

// docs/configuration.md's one table lists every variable internal/config
// reads or declares, once, each with a default; and the defaults it states
// are those config.FromEnv applies when nothing is set.
func TestConfiguration_EveryVariableHasARow(t *testing.T) {
	root, pages := load(t)
	rows := variablesTable(t, pages)
	defaults := map[string]string{}
	for _, r := range rows {
		for i, n := range r.names {
			if _, dup := defaults[n]; dup {
				t.Errorf("docs/configuration.md:%d: %s has a second row", r.line, n)
			}
			d := r.defaults[0]
			if len(r.defaults) == len(r.names) {
				d = r.defaults[i]
			}
			if strings.TrimSpace(d) == "" {
				t.Errorf("docs/configuration.md:%d: %s has no default (write none when there is none)", r.line, n)
			}
			defaults[n] = d
		}
	}
	want := readVariables(t)
	for k := range declaredVariables(t, root) {
		want[k] = true
	}
	for v := range want {
		if _, ok := defaults[v]; !ok {
			t.Errorf("internal/config reads %s, which docs/configuration.md's table does not list: add a row", v)
		}
	}

	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{
		config.EnvJobsTable: cfg.JobsTable, config.EnvDeliveriesTable: cfg.DeliveriesTable,
		config.EnvPayloadBucket: cfg.PayloadBucket, config.EnvMailFrom: cfg.MailFrom,
		config.EnvCritic: cfg.LLM.Critic, config.EnvBedrockModelID: cfg.LLM.BedrockModelID,
		config.EnvOpenAIBaseURL: cfg.LLM.OpenAI.BaseURL, config.EnvOpenAIModel: cfg.LLM.OpenAI.Model, config.EnvOpenAIAPIKey: cfg.LLM.OpenAI.APIKey,
		config.EnvGitHubAPIURL: cfg.GitHub.APIURL, config.EnvGitLabAPIURL: cfg.GitLab.APIURL, config.EnvGerritAPIURL: cfg.Gerrit.APIURL,
		config.EnvWebhookSecret: cfg.WebhookSecret, config.EnvGitHubWebhookSecret: cfg.GitHub.WebhookSecret,
		config.EnvGitLabWebhookToken: cfg.GitLab.WebhookToken, config.EnvGerritWebhookToken: cfg.Gerrit.WebhookToken,
		config.EnvConfigurationSet: cfg.ConfigurationSet, config.EnvPublicURL: cfg.PublicURL,
		config.EnvUnsubscribeKey: cfg.UnsubscribeKey, config.EnvAdminAPIKey: cfg.AdminAPIKey, config.EnvSecretsARN: cfg.SecretsARN,
		config.EnvSESStoreURL: cfg.SESStoreURL, config.EnvReviewerDirectory: cfg.ReviewerDirectory,
		config.EnvProbeAddress: cfg.ProbeAddress, config.EnvLogLevel: cfg.LogLevel,
		config.EnvMaxSendRate:       strconv.Itoa(cfg.Notify.MaxSendRate),
		config.EnvLLMMaxFindings:    strconv.Itoa(cfg.LLM.MaxFindings),
		config.EnvIncrementalReview: strconv.FormatBool(cfg.LLM.IncrementalReview),
		config.EnvAllowPrivateDiffs: strconv.FormatBool(cfg.AllowPrivateDiffs),
	}
	for v, got := range values {
		if d, ok := defaults[v]; ok && defaultValue(d) != got {
			t.Errorf("docs/configuration.md: %s defaults to %q, but config.FromEnv gives %q", v, defaultValue(d), got)
		}
	}
	durations := map[string]time.Duration{
		config.EnvIdempotencyTTL: cfg.IdempotencyTTL, config.EnvRetention: cfg.Retention,
		config.EnvDeliveryLease: cfg.Notify.DeliveryLease, config.EnvEvidenceMargin: cfg.EvidenceMargin,
		config.EnvSweepStuckAfter: cfg.Sweep.StuckAfter, config.EnvEvidenceWindow: cfg.Sweep.EvidenceWindow,
	}
	for v, got := range durations {
		d, err := time.ParseDuration(defaultValue(defaults[v]))
		if err != nil || d != got {
			t.Errorf("docs/configuration.md: %s defaults to %q, but config.FromEnv gives %s", v, defaults[v], got)
		}
	}
	if cfg.DiffURLPorts != nil || defaultValue(defaults[config.EnvDiffURLPorts]) != "80,443" {
		t.Errorf("docs/configuration.md: %s defaults to %q; config.FromEnv gives %v (nil: 80 and 443)",
			config.EnvDiffURLPorts, defaults[config.EnvDiffURLPorts], cfg.DiffURLPorts)
	}
}
