// Command lambdabench measures each function's bootstrap the way Lambda
// runs it: the binary's size (the arm64 build that is deployed and a build
// for this machine), its cold-start init time through the Lambda Runtime
// API, and its peak memory over one invocation.
//
// For every function in functions/ it builds the bootstrap (linux, no cgo,
// -tags lambda.norpc -trimpath -ldflags='-s -w', as `make build` does),
// starts a minimal Runtime API server in-process, execs the bootstrap with
// AWS_LAMBDA_RUNTIME_API pointing at it, and measures:
//
//   - init: exec → the process's first GET /runtime/invocation/next, i.e.
//     Go runtime start, configuration, AWS SDK clients and handler setup
//     (what Lambda bills as Init Duration); the median of -n runs;
//   - invoke: that /next → the posted response or error, for the sample
//     event from events/ (the one `make invoke-<fn>` uses);
//   - peak RSS: VmHWM of /proc/<pid>/status once the process asks for its
//     second invocation (idle after the first), the largest of the runs.
//
// Under `devstack exec` (make lambdabench) the AWS endpoints point at the
// local emulators and lambdabench provisions its own tables and queues, so
// the invocation does its real work. Without them every AWS call is sent
// to a closed local port and fails fast; init is measured all the same.
//
// Usage:
//
//	go run ./cmd/devstack exec -- go run ./cmd/lambdabench [-n 5] [-functions intake,llm]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
)

// sampleEvents is the event each function is invoked with: the Makefile's
// EVENT_<fn> (make invoke-<fn>).
var sampleEvents = map[string]string{
	"intake":   "events/intake-webhook.json",
	"fetch":    "events/fetch-sqs.json",
	"llm":      "events/llm-sqs.json",
	"notify":   "events/notify-sqs.json",
	"feedback": "events/feedback-sqs.json",
	"sweeper":  "events/sweeper-schedule.json",
	"reply":    "events/reply-sqs.json",
}

// lambdaMemoryMB is the smallest memory size the functions are meant to
// fit (Lambda's MB are MiB).
const lambdaMemoryMB = 128

type options struct {
	runs      int
	functions []string
	root      string
	arm64Dir  string // take <dir>/<fn>/bootstrap instead of building
	hostDir   string
	deadline  time.Duration
	timeout   time.Duration
	verbose   bool
}

func main() {
	var o options
	var fns string
	flag.IntVar(&o.runs, "n", 5, "cold starts per function")
	flag.StringVar(&fns, "functions", "", "comma-separated functions (default: every directory in functions/)")
	flag.StringVar(&o.root, "root", ".", "repository root")
	flag.StringVar(&o.arm64Dir, "arm64-dir", "", "take the arm64 bootstraps from DIR/<fn>/bootstrap (e.g. build, after make build) instead of building them")
	flag.StringVar(&o.hostDir, "host-dir", "", "take the host-architecture bootstraps from DIR/<fn>/bootstrap instead of building them")
	flag.DurationVar(&o.deadline, "deadline", 30*time.Second, "the invocation's deadline (Lambda-Runtime-Deadline-Ms)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up on a run after this long")
	flag.BoolVar(&o.verbose, "v", false, "show the functions' log output")
	flag.Parse()
	if fns != "" {
		o.functions = strings.Split(fns, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lambdabench:", err)
		os.Exit(1)
	}
}

// row is one function's figures.
type row struct {
	fn                  string
	arm64Size, hostSize int64
	initP50, invokeP50  time.Duration
	peakRSSKB           int64
	outcome             string
	err                 error
}

func run(ctx context.Context, o options, out io.Writer) error {
	if runtime.GOOS != "linux" {
		return errors.New("the bootstraps are linux binaries: run lambdabench on linux")
	}
	if o.runs < 1 {
		return errors.New("-n must be at least 1")
	}
	if len(o.functions) == 0 {
		dirs, err := os.ReadDir(filepath.Join(o.root, "functions"))
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if d.IsDir() {
				o.functions = append(o.functions, d.Name())
			}
		}
	}
	tmp, err := os.MkdirTemp("", "lambdabench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	arm64, err := bootstraps(ctx, o.root, o.arm64Dir, filepath.Join(tmp, "arm64"), "arm64", o.functions)
	if err != nil {
		return err
	}
	host, err := bootstraps(ctx, o.root, o.hostDir, filepath.Join(tmp, runtime.GOARCH), runtime.GOARCH, o.functions)
	if err != nil {
		return err
	}
	envs, mode, stop, err := functionEnvs(ctx)
	if err != nil {
		return err
	}
	defer stop()

	var rows []row
	failed := false
	for _, fn := range o.functions {
		env, ok := envs[fn]
		if !ok {
			return fmt.Errorf("%s is not a function of the deployment", fn)
		}
		r := measure(ctx, o, fn, arm64[fn], host[fn], env)
		if r.err != nil {
			failed = true
			fmt.Fprintf(os.Stderr, "lambdabench: %s: %v\n", fn, r.err)
		}
		rows = append(rows, r)
	}
	printTable(out, o, mode, rows)
	if failed {
		return errors.New("some functions could not be measured")
	}
	return nil
}

// bootstraps returns each function's bootstrap path for goarch: taken from
// from/<fn>/bootstrap when from is set, else built into dir.
func bootstraps(ctx context.Context, root, from, dir, goarch string, fns []string) (map[string]string, error) {
	out := map[string]string{}
	if from != "" {
		for _, fn := range fns {
			p := filepath.Join(from, fn, "bootstrap")
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("-%s-dir: %w", goarch, err)
			}
			out[fn] = p
		}
		return out, nil
	}
	fmt.Fprintf(os.Stderr, "lambdabench: building %d bootstraps for linux/%s\n", len(fns), goarch)
	for _, fn := range fns {
		p := filepath.Join(dir, fn, "bootstrap")
		cmd := exec.CommandContext(ctx, goCmd(), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", p, "./functions/"+fn)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s for %s: %w\n%s", fn, goarch, err, b)
		}
		out[fn] = p
	}
	return out, nil
}

func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// functionEnvs are the environments the bootstraps get, by function,
// besides Lambda's own variables: each function's environment in the
// deployment's template, evaluated against the resources lambdabench
// provisions on the local stack (devstack.BootstrapEnvs, as make run and
// the tests give it), its secrets in a local Secrets Manager, and this
// process's AWS settings and LOG_LEVEL. mode says which case applies;
// stop stops the Secrets Manager.
func functionEnvs(ctx context.Context) (envs map[string][]string, mode string, stop func(), err error) {
	var common []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(k, "AWS_") && !strings.HasPrefix(k, "AWS_LAMBDA_")) || k == "LOG_LEVEL" {
			common = append(common, kv)
		}
	}
	set := func(k, v string) {
		if os.Getenv(k) == "" {
			common = append(common, k+"="+v)
		}
	}
	set("AWS_REGION", "us-east-1")
	set("AWS_ACCESS_KEY_ID", "lambdabench")
	set("AWS_SECRET_ACCESS_KEY", "lambdabench")

	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return nil, "", nil, err
	}
	// The sample intake event is signed with the local stack's secret;
	// the reply keys are derived from the unsubscribe key.
	cfg.WebhookSecret, cfg.UnsubscribeKey = devstack.LocalGenericSecret, devstack.LocalUnsubscribeKey
	cfg.Endpoints = config.EndpointsFromEnv(os.Getenv)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "lambdabench-" + hex.EncodeToString(b)
	res := devstack.PlaceholderResources(name)
	mode = "no local stack: every AWS call goes to a closed port and fails fast (init is measured all the same)"
	if cfg.Endpoints.Local() {
		clients, err := devstack.NewClients(ctx, cfg.Endpoints)
		if err != nil {
			return nil, "", nil, err
		}
		if res, err = devstack.Provision(ctx, clients, name); err != nil {
			return nil, "", nil, fmt.Errorf("provision the local stack: %w", err)
		}
		mode = "local stack (devstack exec): tables and queues provisioned, the invocations do their real work"
	} else {
		common = append(common, "AWS_ENDPOINT_URL=http://127.0.0.1:1")
	}
	sm, err := devstack.StartSecretsManager()
	if err != nil {
		return nil, "", nil, err
	}
	tpl, err := devstack.DeployedTemplate()
	if err != nil {
		_ = sm.Close()
		return nil, "", nil, err
	}
	byFn, err := devstack.BootstrapEnvs(tpl, res, cfg, sm)
	if err != nil {
		_ = sm.Close()
		return nil, "", nil, err
	}
	envs = map[string][]string{}
	for fn, env := range byFn {
		e := slices.Clone(common)
		for k, v := range env {
			e = append(e, k+"="+v)
		}
		envs[fn] = e
	}
	return envs, mode, func() { _ = sm.Close() }, nil
}

// sample is one cold start.
type sample struct {
	init, invoke time.Duration
	rssKB        int64
	outcome      string
}

func measure(ctx context.Context, o options, fn, arm64Bin, hostBin string, env []string) row {
	r := row{fn: fn, arm64Size: fileSize(arm64Bin), hostSize: fileSize(hostBin)}
	eventPath, ok := sampleEvents[fn]
	if !ok {
		r.err = fmt.Errorf("no sample event for %s (add it to sampleEvents)", fn)
		return r
	}
	event, err := os.ReadFile(filepath.Join(o.root, eventPath))
	if err != nil {
		r.err = err
		return r
	}
	var samples []sample
	for range o.runs {
		s, err := coldStart(ctx, o, fn, hostBin, env, event)
		if err != nil {
			r.err = err
			return r
		}
		samples = append(samples, s)
	}
	r.initP50 = median(samples, func(s sample) time.Duration { return s.init })
	r.invokeP50 = median(samples, func(s sample) time.Duration { return s.invoke })
	outcomes := map[string]int{}
	for _, s := range samples {
		r.peakRSSKB = max(r.peakRSSKB, s.rssKB)
		outcomes[s.outcome]++
	}
	var parts []string
	for k, n := range outcomes {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(parts)
	r.outcome = strings.Join(parts, ", ")
	return r
}

// coldStart execs the bootstrap once, serves it the event, and kills it
// when it asks for the next one.
func coldStart(ctx context.Context, o options, fn, bin string, env []string, event []byte) (sample, error) {
	var s sample
	api, err := NewRuntimeAPI(event, "arn:aws:lambda:us-east-1:123456789012:function:criticizer-"+fn, o.deadline)
	if err != nil {
		return s, err
	}
	defer api.Close()

	abs, err := filepath.Abs(bin)
	if err != nil {
		return s, err
	}
	logs := &tail{max: 40}
	var w io.Writer = logs
	if o.verbose {
		w = io.MultiWriter(logs, prefixWriter{w: os.Stderr, prefix: fn + "| "})
	}
	cmd := exec.Command(abs)
	cmd.Dir = filepath.Dir(abs)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(slices.Clone(env),
		"AWS_LAMBDA_RUNTIME_API="+api.Addr(),
		"AWS_LAMBDA_FUNCTION_NAME=criticizer-"+fn,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(lambdaMemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/criticizer-"+fn,
		"AWS_EXECUTION_ENV=AWS_Lambda_provided.al2023",
		"LAMBDA_TASK_ROOT="+cmd.Dir, "_HANDLER=bootstrap", "TZ=:UTC",
		"PATH=/usr/local/bin:/usr/bin:/bin",
	)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return s, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := false
	defer func() {
		if !done {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	fail := func(step string, err error) (sample, error) {
		return s, fmt.Errorf("%s: %w\n--- last output of the bootstrap:\n%s", step, err, logs)
	}

	var first time.Time
	select {
	case first = <-api.FirstNext():
	case err := <-exited:
		done = true
		return fail("init", fmt.Errorf("the bootstrap exited before asking for an invocation (%v)", err))
	case <-ctx.Done():
		return fail("init", errTimeout("the first /next"))
	}
	s.init = first.Sub(start)

	var res Result
	select {
	case res = <-api.Results():
	case err := <-exited:
		done = true
		return fail("invoke", fmt.Errorf("the bootstrap exited during the invocation (%v)", err))
	case <-ctx.Done():
		return fail("invoke", errTimeout("the invocation's response"))
	}
	s.invoke = res.At.Sub(first)
	s.outcome = outcome(res)

	select {
	case <-api.Idle():
	case err := <-exited:
		done = true
		return fail("idle", fmt.Errorf("the bootstrap exited after the invocation (%v)", err))
	case <-ctx.Done():
		return fail("idle", errTimeout("the second /next"))
	}
	s.rssKB = vmHWM(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	<-exited
	done = true
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && s.rssKB == 0 {
		s.rssKB = ru.Maxrss // KiB on Linux
	}
	return s, nil
}

// outcome summarizes what the function answered: "response", "response
// (2 batch item failures)", or "error: <type>".
func outcome(res Result) string {
	if res.Kind != "response" {
		t := res.ErrorType
		if t == "" {
			var e struct{ ErrorType string }
			_ = json.Unmarshal(res.Body, &e)
			t = e.ErrorType
		}
		return res.Kind + ": " + t
	}
	var batch struct {
		BatchItemFailures []json.RawMessage `json:"batchItemFailures"`
	}
	if json.Unmarshal(res.Body, &batch) == nil && len(batch.BatchItemFailures) > 0 {
		return fmt.Sprintf("response (%d batch item failures)", len(batch.BatchItemFailures))
	}
	var api struct {
		StatusCode int `json:"statusCode"`
	}
	if json.Unmarshal(res.Body, &api) == nil && api.StatusCode != 0 {
		return fmt.Sprintf("response (HTTP %d)", api.StatusCode)
	}
	return "response"
}

// vmHWM is the process's peak resident set size in KiB (0 if unknown).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return parseVmHWM(b)
}

func parseVmHWM(status []byte) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func median(samples []sample, f func(sample) time.Duration) time.Duration {
	v := make([]time.Duration, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) }

func printTable(w io.Writer, o options, mode string, rows []row) {
	fmt.Fprintf(w, "Lambda bootstraps: %d cold starts each through a local Runtime API, on linux/%s (%d CPUs); %s.\n\n",
		o.runs, runtime.GOARCH, runtime.NumCPU(), mode)
	fmt.Fprintf(w, "| function | bootstrap arm64 (MB) | bootstrap %s (MB) | init p50 (ms) | invoke p50 (ms) | peak RSS (MB) | fits %d MB | invocation |\n",
		runtime.GOARCH, lambdaMemoryMB)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---|")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %s | %s | – | – | – | – | failed: %s |\n", r.fn, mib(r.arm64Size), mib(r.hostSize),
				strings.SplitN(r.err.Error(), "\n", 2)[0])
			continue
		}
		fits := "no"
		if r.peakRSSKB*1024 < lambdaMemoryMB<<20 {
			fits = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f | %.1f | %s | %s | %s |\n", r.fn, mib(r.arm64Size), mib(r.hostSize),
			float64(r.initP50.Microseconds())/1000, float64(r.invokeP50.Microseconds())/1000, mib(r.peakRSSKB*1024), fits, r.outcome)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "init: exec → first GET /runtime/invocation/next (median). invoke: that /next → the posted response (median).")
	fmt.Fprintln(w, "peak RSS: VmHWM after one invocation, the largest of the runs. MB are MiB, as Lambda's memory sizes. Figures from")
	fmt.Fprintln(w, "a shared dev machine: compare them with each other and over time, not with Lambda's own Init Duration.")
}

// tail keeps the last lines written to it.
type tail struct {
	mu    sync.Mutex
	max   int
	lines []string
	part  bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part.Write(p)
	for {
		line, err := t.part.ReadString('\n')
		if err != nil {
			t.part.Reset()
			t.part.WriteString(line)
			break
		}
		t.lines = append(t.lines, strings.TrimRight(line, "\n"))
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(slices.Clone(t.lines), t.part.String()), "\n")
}

// prefixWriter writes each chunk with a prefix (the function's logs are
// JSON lines, written whole).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	_, err := p.w.Write(append([]byte(p.prefix), b...))
	return len(b), err
}
