// Command chaos runs a randomized fault campaign against the local stack
// and prints, per fault kind, what was injected and what became of the jobs
// it hit. It exits 1 when an invariant fails (a duplicate email, a lost or
// stuck job, a secret or raw address in a log line or dead letter).
//
//	go run ./cmd/devstack exec -- go run ./cmd/chaos -jobs 200 -seed 42
//
// (`make chaos SEED=42 JOBS=200`). It needs the emulators' endpoints that
// `devstack exec` exports (AWS_ENDPOINT_URL_*, CRITICIZER_TEST_SES_URL).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/chaos"
	"github.com/criticizer/criticizer/internal/config"
)

func main() {
	var c chaos.Config
	var logPath string
	flag.IntVar(&c.Jobs, "jobs", 200, "reviews to post (each 1–5 recipients)")
	flag.Uint64Var(&c.Seed, "seed", 0, "campaign seed (0: derived from the clock, printed)")
	flag.Float64Var(&c.Rate, "rate", 0.03, "probability that an AWS call is failed")
	flag.IntVar(&c.Concurrency, "concurrency", 8, "webhook deliveries posted at once")
	flag.Float64Var(&c.DupRate, "duplicates", 0.3, "share of webhooks delivered twice")
	flag.Float64Var(&c.PoisonRate, "poison", 0.05, "share of reviews with a malformed diff, which must end dead-lettered (negative: none)")
	flag.Float64Var(&c.ReplyRate, "replies", 0.2, "share of critiques a reviewer replies to while faults are on (negative: none)")
	flag.DurationVar(&c.RestartEvery, "restart-every", 5*time.Second, "stop and start the function workers this often while faults are on")
	flag.DurationVar(&c.Drain, "drain", 5*time.Minute, "how long to wait, after the faults stop, for every job to finish and the queues to empty")
	flag.StringVar(&logPath, "log", "", "write the functions' JSON logs to this file")
	flag.Parse()
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	st := chaos.Stack{Endpoints: config.EndpointsFromEnv(os.Getenv), SESURL: os.Getenv("CRITICIZER_TEST_SES_URL")}
	if !st.Endpoints.Local() || st.SESURL == "" {
		fmt.Fprintln(os.Stderr, "chaos: needs the local stack; run: go run ./cmd/devstack exec -- go run ./cmd/chaos")
		os.Exit(2)
	}
	c.Log, c.Progress = io.Discard, os.Stderr
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		defer f.Close()
		c.Log = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, st, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if len(rep.Failures()) > 0 {
		stop()
		os.Exit(1)
	}
}
