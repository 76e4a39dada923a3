// Command bench measures Criticizer on the local stack and prints one
// table: intake throughput and latency against the Powertools for AWS
// Lambda idempotency utility as a peer, webhook-to-email latency through
// the whole pipeline, and AWS calls per delivered notification next to the
// design's minimum. `make bench` runs it under `devstack exec`, which
// starts the emulators and exports their endpoints; docs/benchmarks.md
// explains each figure and what limits it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/cost"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/intake"
)

// benchSecret signs the benchmark's webhooks: at least 32 bytes, as a
// deployment's intake requires (its secret is checked as deployed).
const benchSecret = "bench-secret-0123456789abcdef0123456789"

type options struct {
	requests, warmup                int
	levels, recipients              []int
	dupRatio                        float64
	peerDir                         string
	noPeer                          bool
	webhooks, pipeRcpts             int
	rate                            float64
	pollers, callJobs               int
	timeout                         time.Duration
	skipIntake, skipPipe, skipCalls bool
	capRequests                     int
	skipTokens                      bool
	sweep                           sweepOptions
}

func main() {
	var o options
	var levels, rcpts string
	flag.IntVar(&o.requests, "requests", 1000, "measured intake requests per concurrency level and system")
	flag.IntVar(&o.warmup, "warmup", 100, "warm-up intake requests per level and system (not measured)")
	flag.StringVar(&levels, "concurrency", "1,8,64", "intake concurrency levels (concurrent in-process clients)")
	flag.Float64Var(&o.dupRatio, "dup", 0.3, "share of intake requests that re-send an earlier webhook")
	flag.StringVar(&o.peerDir, "peer", "bench/powertools", "folder of the Powertools peer (npm ci done)")
	flag.BoolVar(&o.noPeer, "no-peer", false, "skip the Powertools peer")
	flag.IntVar(&o.webhooks, "webhooks", 500, "webhooks through the whole pipeline for the latency figure")
	flag.IntVar(&o.pipeRcpts, "pipeline-recipients", 1, "recipients per webhook in the latency run")
	flag.Float64Var(&o.rate, "rate", 10, "webhooks per second in the latency run, below the default send rate of 14/s so the figure is the pipeline's, not the limiter's (0: as fast as possible)")
	flag.IntVar(&o.pollers, "pollers", 2, "pollers per stage queue (the functions' concurrency)")
	flag.IntVar(&o.callJobs, "call-jobs", 10, "jobs per recipient count for the AWS-calls figure")
	flag.StringVar(&rcpts, "recipients", "1,3,20", "recipient counts for the AWS-calls figure")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for a run's emails")
	flag.BoolVar(&o.skipIntake, "skip-intake", false, "skip the intake figures")
	flag.BoolVar(&o.skipPipe, "skip-pipeline", false, "skip the webhook-to-email latency")
	flag.BoolVar(&o.skipCalls, "skip-calls", false, "skip the AWS calls per notification and the cost table (sections 4, 6, 7a)")
	flag.IntVar(&o.capRequests, "capacity-requests", 100, "unique webhooks (then each again) for intake's consumed capacity against the peer (section 7b; 0 skips it)")
	flag.BoolVar(&o.skipTokens, "skip-tokens", false, "skip the model tokens per review (section 7c)")
	o.sweep.flags()
	flag.Parse()
	var err error
	if o.levels, err = ints(levels); err == nil {
		o.recipients, err = ints(rcpts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, o options, w io.Writer) error {
	if os.Getenv("CRITICIZER_TEST_STACK") == "" {
		return fmt.Errorf("needs the local stack: go run ./cmd/devstack exec -- go run ./cmd/bench (or make bench)")
	}
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return err
	}
	cfg.Endpoints = config.EndpointsFromEnv(os.Getenv)
	cfg.WebhookSecret, cfg.SESStoreURL, cfg.AllowPrivateDiffs = benchSecret, os.Getenv("CRITICIZER_TEST_SES_URL"), true
	cfg.DiffURLPorts = []int{0}
	// The latency measured is the pipeline's, not the collapse window's
	// deliberate wait (R-QUIET-3).
	cfg.LLM.CollapseWindow = 0
	runID := os.Getenv("CRITICIZER_TEST_RUN")
	if runID == "" {
		runID = strconv.FormatInt(time.Now().Unix(), 36)
	}
	// Logs are dropped: the figures are the output, and an info line per
	// request would measure the log writer. Warnings still cost their
	// formatting, as they would in Lambda.
	log := obs.NewLogger(io.Discard, "warn")
	rep := report{machine: machineInfo(), opts: o}
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...) }

	if !o.skipIntake {
		counter := NewCounter()
		plain, err := devstack.NewClients(ctx, cfg.Endpoints, quiet)
		if err != nil {
			return err
		}
		res, err := devstack.Provision(ctx, plain, "bench-"+runID+"-intake")
		if err != nil {
			return err
		}
		icfg := cfg
		res.Apply(&icfg)
		h, err := intake.New(ctx, icfg, log, wire.Options{AWS: []awsclient.Option{counter.Option(), quiet}})
		if err != nil {
			return err
		}
		var peer peerResources
		if !o.noPeer {
			if peer, err = provisionPeer(ctx, plain, "bench-"+runID); err != nil {
				return err
			}
		}
		tmp, err := os.MkdirTemp("", "criticizer-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		// Warm the emulator's JVM on both systems' paths (transactions,
		// conditional puts) before anything is measured: whichever ran first
		// would otherwise pay DynamoDB Local's JIT warm-up.
		if o.warmup > 0 {
			progress("intake: warming up both systems")
			pre := workload("pre-"+runID, 2*o.warmup, o.dupRatio, 16, []byte(benchSecret), 99)
			runCriticizerIntake(ctx, h, counter, nil, pre, 8)
			if !o.noPeer {
				if _, err := runPeer(ctx, o.peerDir, peer, benchSecret, nil, pre, 8, tmp); err != nil {
					return err
				}
			}
		}
		for i, c := range o.levels {
			prefix := fmt.Sprintf("%s-c%d", runID, c)
			warm := workload("warm-"+prefix, o.warmup, 0, 1, []byte(benchSecret), uint64(c))
			reqs := workload("cl-"+prefix, o.requests, o.dupRatio, 2*c, []byte(benchSecret), uint64(c))
			row := intakeRow{clients: c}
			crit := func() {
				progress("intake: Criticizer, %d clients, %d requests", c, len(reqs))
				row.crit = runCriticizerIntake(ctx, h, counter, warm, reqs, c)
			}
			// The same requests: the peer has its own tables and queue. The
			// order alternates by level, so drift in the machine's load
			// does not always favour the same system.
			peerRun := func() error {
				if o.noPeer {
					return nil
				}
				progress("intake: Powertools peer, %d clients, %d requests", c, len(reqs))
				p, err := runPeer(ctx, o.peerDir, peer, benchSecret, warm, reqs, c, tmp)
				row.peer = &p
				return err
			}
			if i%2 == 0 {
				crit()
				if err := peerRun(); err != nil {
					return err
				}
			} else {
				if err := peerRun(); err != nil {
					return err
				}
				crit()
			}
			rep.intake = append(rep.intake, row)
		}
	}
	if !o.skipPipe {
		progress("pipeline: %d webhooks at %.0f/s, %d recipient(s) each", o.webhooks, o.rate, o.pipeRcpts)
		p, err := runPipeline(ctx, cfg, runID, o.webhooks, o.pipeRcpts, o.rate, o.pollers, o.timeout, log)
		if err != nil {
			return err
		}
		rep.pipeline = &p
	}
	if !o.skipCalls {
		rep.dep = describedDeployment()
		rep.prices = cost.USEast1()
		for _, r := range o.recipients {
			progress("calls: %d jobs with %d recipient(s)", o.callJobs, r)
			c, err := runCalls(ctx, cfg, runID, o.callJobs, r, o.pollers, o.timeout)
			if err != nil {
				return err
			}
			rep.calls = append(rep.calls, c)
		}
	}
	if o.capRequests > 0 {
		progress("capacity: intake, %d unique webhooks then each again, Criticizer and the peer", o.capRequests)
		tmp, err := os.MkdirTemp("", "criticizer-bench-cap-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		crit, peer, err := runIntakeCapacity(ctx, cfg, runID, o.peerDir, o.capRequests, o.noPeer, tmp, log)
		if err != nil {
			return err
		}
		rep.capCrit, rep.capPeer = &crit, peer
	}
	if !o.skipTokens {
		progress("tokens: the LLM critic on the sample change, the eval cases and a rerun sequence")
		if rep.tokens, rep.reruns, rep.context, err = runTokens(ctx); err != nil {
			return err
		}
	}
	if !o.sweep.skip {
		progress("sweep: %d terminal jobs, %d terminal rows, %d live items", o.sweep.jobs, o.sweep.rows, o.sweep.live)
		// Last and the longest: a failure here is printed in its section,
		// not allowed to lose the table measured before it.
		s, err := runSweep(ctx, cfg, runID, o.sweep, progress)
		if err != nil {
			rep.sweepErr = err
		} else {
			rep.sweep = &s
		}
	}
	rep.print(w)
	if rep.sweepErr != nil {
		return fmt.Errorf("sweep: %w", rep.sweepErr)
	}
	return nil
}

// machineInfo notes what the figures were measured on.
func machineInfo() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	node := "node ?"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = "node " + strings.TrimSpace(string(out))
	}
	// The load average says how much else shared the cores.
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s %s/%s, %s; %s; load average at start %s",
		cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, node,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), load)
}
