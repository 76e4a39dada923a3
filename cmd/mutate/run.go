package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// check is one part of the proof a mutation is run against.
type check struct {
	name string
	// pkg is the package the check builds and runs.
	pkg string
	// sees are the packages whose dependencies decide whether the check
	// can see a mutated file at all: a file outside them is not run
	// against it. (A package's test dependencies are too wide: the
	// DynamoDB suite's reach the whole stack through testenv.)
	sees []string
	// stack: the check needs the local stack (go run ./cmd/devstack exec).
	stack bool
	// timeout bounds one run of the check.
	timeout time.Duration
	// named: run only against a mutation whose Checks name it. A focused
	// unit or end-to-end test sees the packages it builds, and would
	// otherwise be run against every mutation of them (the explorer's
	// equivalents among them).
	named bool
	run   func(r *runner, c check, m Mutation, overlay, dir string) (outcome, error)
}

// outcome is what one check made of one mutation.
type outcome struct {
	caught bool
	how    string // the violation or the failing test
	output string
}

// checks are the proof's parts, in the order they are tried: the
// explorer first, since measuring it is the point; the conformance suites
// for what the explorer cannot see (the DynamoDB store) or does not
// reach.
func checks() []check {
	return []check{
		{name: "explore", pkg: "./cmd/explore", sees: []string{"./cmd/explore"}, timeout: 20 * time.Minute, run: runExplore},
		{name: "conformance/memstore", pkg: "./internal/store/memstore", sees: []string{"./internal/store/memstore", "./internal/store/storetest"},
			timeout: 5 * time.Minute, run: goTest(`^Test` + conformanceSuites + `_Memstore$`)},
		{name: "conformance/dynamodb", pkg: "./internal/store/dynamo", sees: []string{"./internal/store/dynamo", "./internal/store/storetest"},
			stack: true, timeout: 10 * time.Minute, run: goTest(`^Test` + conformanceSuites + `_DynamoDB$`)},
		// Focused tests of the fixes the explorer and the suites
		// cannot see (a reply's headers, a dismissal's place, the
		// trusted commit, a code host's order): each names the tests
		// that prove its rule.
		{name: "unit/inbound", pkg: "./internal/inbound", sees: []string{"./internal/inbound"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^Test(Process|From|Authenticated|Key)_`)},
		{name: "unit/critic", pkg: "./internal/critic", sees: []string{"./internal/critic"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^Test(SameKey|Place|Incremental)_`)},
		{name: "unit/dismissal", pkg: "./internal/pipeline", sees: []string{"./internal/pipeline"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^TestDismissal_`)},
		{name: "unit/source", pkg: "./internal/source", sees: []string{"./internal/source"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^Test(BaseFile|GerritFetch|LabelsBeyondAuthor)_`)},
		{name: "unit/fetch-order", pkg: "./internal/pipeline", sees: []string{"./internal/pipeline"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^TestFetch_PendingHead`)},
		{name: "unit/webhook", pkg: "./internal/webhook", sees: []string{"./internal/webhook"}, named: true,
			timeout: 5 * time.Minute, run: goTest(`^TestParseEvent_BeforeSHA$`)},
		// End to end on the local stack: the same fixes through intake,
		// the stages and SES (internal/e2e).
		{name: "e2e/replies", pkg: "./internal/e2e", sees: []string{"./internal/e2e", "./internal/inbound"}, named: true, stack: true,
			timeout: 10 * time.Minute, run: goTest(`^TestReply_(TwoFromFields|SameReplySentTwice)_`)},
	}
}

// conformanceSuites are the store suites the conformance checks run, on
// each driver: every contract whose conditions are mutated
// (store_mutations.go).
const conformanceSuites = `(Deliveries|Jobs|Digests|Replies|Budgets|Preferences|ReviewerStores|Posts)`

func checkNames() []string {
	var out []string
	for _, c := range checks() {
		out = append(out, c.name)
	}
	return out
}

func selectChecks(list string) ([]check, error) {
	var out []check
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, c := range checks() {
			if c.name == strings.TrimSpace(name) {
				out, found = append(out, c), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no check %q (have %s)", name, strings.Join(checkNames(), ", "))
		}
	}
	return out, nil
}

// runner runs the checks against mutations.
type runner struct {
	root   string
	module string
	checks []check
	// partial: -checks left some out, so a mutation may have none to run.
	partial bool
	all     bool
	verbose bool
	// deps holds, per check, the import paths it builds.
	deps map[string]map[string]bool
	mu   sync.Mutex
	// ctx ends every command when the run is interrupted.
	ctx context.Context
}

// prepare reads the module path and each check's dependencies, and
// refuses to start a check that needs the stack outside it.
func (r *runner) prepare() error {
	out, err := r.goCmd(r.ctx, nil, "list", "-m")
	if err != nil {
		return fmt.Errorf("go list -m: %w", err)
	}
	r.module = strings.TrimSpace(out)
	r.deps = map[string]map[string]bool{}
	for _, c := range r.checks {
		if c.stack && os.Getenv("CRITICIZER_TEST_STACK") == "" {
			return fmt.Errorf("check %s needs the local stack: run under `go run ./cmd/devstack exec --` (make mutate), or leave it out with -checks", c.name)
		}
		out, err := r.goCmd(r.ctx, nil, append([]string{"list", "-deps"}, c.sees...)...)
		if err != nil {
			return fmt.Errorf("go list -deps %s: %w", strings.Join(c.sees, " "), err)
		}
		set := map[string]bool{}
		for _, p := range strings.Fields(out) {
			set[p] = true
		}
		r.deps[c.name] = set
	}
	return nil
}

// sees reports whether check c builds the package of file.
func (r *runner) sees(c check, file string) bool {
	return r.deps[c.name][r.module+"/"+filepath.ToSlash(filepath.Dir(file))]
}

// result is one mutation's fate.
type result struct {
	m        Mutation
	caughtBy string
	how      string
	ran      []string // the checks run
	elapsed  time.Duration
	err      error
}

func (r *runner) runAll(ms []Mutation, jobs int) []result {
	results := make([]result, len(ms))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(jobs, 1) {
		wg.Go(func() {
			for i := range next {
				results[i] = r.one(ms[i])
				r.progress(results[i])
			}
		})
	}
	for i := range ms {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

func (r *runner) progress(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case res.err != nil:
		fmt.Printf("%-34s ERROR %v\n", res.m.ID, res.err)
	case len(res.ran) == 0:
		fmt.Printf("%-34s not checked: none of the selected checks runs it\n", res.m.ID)
	case res.m.Equivalent != "" && res.caughtBy == "":
		fmt.Printf("%-34s equivalent, not caught, as listed: %s (%s)\n", res.m.ID, strings.Join(res.ran, ", "), res.elapsed.Round(time.Second))
	case res.caughtBy != "":
		fmt.Printf("%-34s caught by %s: %s (%s)\n", res.m.ID, res.caughtBy, res.how, res.elapsed.Round(time.Second))
	default:
		fmt.Printf("%-34s SURVIVED %s (%s)\n", res.m.ID, strings.Join(res.ran, ", "), res.elapsed.Round(time.Second))
	}
}

// one applies m in a scratch directory and runs the checks that see its
// file, in order, until one catches it (or all, with -all).
func (r *runner) one(m Mutation) result {
	start := time.Now()
	res := result{m: m}
	defer func() { res.elapsed = time.Since(start) }()
	dir, err := os.MkdirTemp("", "mutate-"+m.ID+"-")
	if err != nil {
		res.err = err
		return res
	}
	defer os.RemoveAll(dir)
	src, err := m.Apply(r.root)
	if err != nil {
		res.err = err
		return res
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, src, 0o644); err != nil {
		res.err = err
		return res
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(r.root, m.File): mutated}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		res.err = err
		return res
	}
	for _, c := range r.ordered(m) {
		if !r.sees(c, m.File) {
			continue
		}
		res.ran = append(res.ran, c.name)
		out, err := c.run(r, c, m, overlay, dir)
		if r.verbose {
			r.mu.Lock()
			fmt.Printf("--- %s / %s\n%s\n", m.ID, c.name, out.output)
			r.mu.Unlock()
		}
		if err != nil {
			res.err = fmt.Errorf("%s: %w", c.name, err)
			return res
		}
		if out.caught && res.caughtBy == "" {
			res.caughtBy, res.how = c.name, out.how
			if !r.all {
				break
			}
		}
	}
	if len(res.ran) == 0 && !r.partial {
		res.err = fmt.Errorf("no check builds %s", m.File)
	}
	res.elapsed = time.Since(start)
	return res
}

// ordered is the selected checks in the order m asks for.
func (r *runner) ordered(m Mutation) []check {
	if len(m.Checks) == 0 {
		var out []check
		for _, c := range r.checks {
			if !c.named {
				out = append(out, c)
			}
		}
		return out
	}
	var out []check
	for _, name := range m.Checks {
		for _, c := range r.checks {
			if c.name == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// violation is cmd/explore's report of a violation.
var violation = regexp.MustCompile(`(?m)^VIOLATION in (\S+): (.*)$`)

// runExplore builds cmd/explore with the mutation and runs make test's
// bounds, stopping at the first violation; the mutation's scenarios
// first.
func runExplore(r *runner, c check, m Mutation, overlay, dir string) (outcome, error) {
	ctx, cancel := context.WithTimeout(r.ctx, c.timeout)
	defer cancel()
	bin := filepath.Join(dir, "explore")
	if out, err := r.goCmd(ctx, nil, "build", "-overlay", overlay, "-o", bin, "./cmd/explore"); err != nil {
		return outcome{output: out}, fmt.Errorf("the mutant does not build: %w\n%s", err, out)
	}
	args := []string{"-shallow", "-variant", "as-built", "-first"}
	if len(m.Scenarios) > 0 {
		args = append(args, "-order", strings.Join(m.Scenarios, ","))
	}
	cmd := command(ctx, bin, args...)
	cmd.Dir = r.root
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	out := b.String()
	if ctx.Err() != nil {
		return outcome{output: out}, fmt.Errorf("timed out after %s", c.timeout)
	}
	if err == nil {
		return outcome{output: out}, nil
	}
	if v := violation.FindStringSubmatch(out); v != nil {
		return outcome{caught: true, how: v[1] + ": " + firstLine(v[2]), output: out}, nil
	}
	if i := strings.Index(out, "INCOMPLETE: "); i >= 0 {
		return outcome{caught: true, how: firstLine(out[i:]), output: out}, nil
	}
	if i := strings.Index(out, "panic: "); i >= 0 {
		return outcome{caught: true, how: "the explorer crashed: " + firstLine(out[i:]), output: out}, nil
	}
	return outcome{output: out}, fmt.Errorf("explore failed without a violation: %w\n%s", err, tail(out, 20))
}

// failed is go test's line for a failing (sub)test.
var failed = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// goTest runs the tests of the check's package matching pattern with the
// mutation.
func goTest(pattern string) func(r *runner, c check, m Mutation, overlay, dir string) (outcome, error) {
	return func(r *runner, c check, m Mutation, overlay, dir string) (outcome, error) {
		ctx, cancel := context.WithTimeout(r.ctx, c.timeout)
		defer cancel()
		env := []string{"CRITICIZER_REQUIRE_STACK="}
		if c.stack {
			env = []string{"CRITICIZER_REQUIRE_STACK=1"}
		}
		out, err := r.goCmd(ctx, env, "test", "-overlay", overlay, "-count=1", "-failfast", "-run", pattern, c.pkg)
		if ctx.Err() != nil {
			return outcome{output: out}, fmt.Errorf("timed out after %s", c.timeout)
		}
		if err == nil {
			return outcome{output: out}, nil
		}
		if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
			return outcome{output: out}, fmt.Errorf("the mutant does not build:\n%s", tail(out, 20))
		}
		// The deepest failing test names what broke.
		fs := failed.FindAllStringSubmatch(out, -1)
		if len(fs) == 0 {
			return outcome{caught: true, how: "go test failed: " + firstLine(tail(out, 3)), output: out}, nil
		}
		sort.SliceStable(fs, func(i, j int) bool { return strings.Count(fs[i][1], "/") > strings.Count(fs[j][1], "/") })
		return outcome{caught: true, how: fs[0][1], output: out}, nil
	}
}

// goCmd runs the go command in the module root.
func (r *runner) goCmd(ctx context.Context, env []string, args ...string) (string, error) {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := command(ctx, goBin, args...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// command is exec.CommandContext in a process group of its own, ended
// whole when ctx ends: go test's test binary and the explorer go with
// the command that started them.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the module")
	}
	return filepath.Dir(mod), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// report prints the table and the kill rate, and fails when the proof
// is weaker than the list says.
func report(w io.Writer, results []result, elapsed time.Duration) error {
	fmt.Fprintf(w, "\n| mutation | file | caught by | how |\n|---|---|---|---|\n")
	killed, counted, survived, wrongEquivalent, errs, skipped := 0, 0, 0, 0, 0, 0
	for _, res := range results {
		by, how := res.caughtBy, res.how
		switch {
		case res.err != nil:
			errs++
			by, how = "ERROR", firstLine(res.err.Error())
		case len(res.ran) == 0:
			skipped++
			by, how = "not checked", "none of the selected checks runs it"
		case res.m.Equivalent != "" && by != "":
			wrongEquivalent++
			how += " (listed as equivalent: it is not)"
		case res.m.Equivalent != "":
			by, how = "equivalent", res.m.Equivalent
		case by != "":
			killed++
			counted++
		default:
			survived++
			counted++
			by, how = "SURVIVED", "ran "+strings.Join(res.ran, ", ")
		}
		fmt.Fprintf(w, "| `%s` | `%s` | %s | %s |\n", res.m.ID, res.m.File, by, strings.ReplaceAll(how, "|", "\\|"))
	}
	rate := 0.0
	if counted > 0 {
		rate = 100 * float64(killed) / float64(counted)
	}
	fmt.Fprintf(w, "\nkilled %d of %d mutations that change behaviour (%.0f%%); %d equivalent; %d not checked; %s\n",
		killed, counted, rate, len(results)-counted-errs-skipped, skipped, elapsed.Round(time.Second))
	var problems []string
	if survived > 0 {
		problems = append(problems, fmt.Sprintf("%d survived", survived))
	}
	if wrongEquivalent > 0 {
		problems = append(problems, fmt.Sprintf("%d listed as equivalent were caught", wrongEquivalent))
	}
	if errs > 0 {
		problems = append(problems, fmt.Sprintf("%d could not be checked", errs))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
