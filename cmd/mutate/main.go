// Command mutate measures how strong the proof of the delivery protocol
// is: it plants each of a fixed list of bugs (mutations.go) in the real
// protocol code, one at a time, and runs against each the checks that
// stand for the proof — the exhaustive exploration (cmd/explore at make
// test's bounds, stopping at the first violation) and the store
// conformance suites, in memory and on DynamoDB Local. A mutation is
// caught (killed) when a check fails; it prints, per mutation, which check
// caught it and how, and the kill rate.
//
// A mutation is applied with `go build -overlay` (the mutated file is
// written to a temporary directory and swapped in at build time): the
// working tree is never touched, so nothing needs undoing after a crash.
// A mutation whose target text is no longer found exactly once in its file
// fails the run, naming it: the list cannot silently rot.
//
//	go run ./cmd/devstack exec -- go run ./cmd/mutate      (make mutate)
//	go run ./cmd/mutate -run requeue -checks explore        one mutation, one check
//	go run ./cmd/mutate -list                               the list
//
// It exits non-zero when a mutation that changes behaviour survives every
// check, when one listed as equivalent is caught (it is not equivalent),
// or when a mutation does not apply or does not build.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"
)

func main() {
	run := flag.String("run", "", "only the mutations whose id matches this regular expression")
	checks := flag.String("checks", strings.Join(checkNames(), ","), "the checks to run, in order")
	list := flag.Bool("list", false, "print the mutations and exit")
	jobs := flag.Int("jobs", 2, "mutations checked at once")
	all := flag.Bool("all", false, "run every check on every mutation, not only until the first catches it")
	verbose := flag.Bool("v", false, "print each check's output")
	flag.Parse()
	if err := mainErr(*run, *checks, *list, *jobs, *all, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func mainErr(runRe, checkList string, list bool, jobs int, all, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	re, err := regexp.Compile(runRe)
	if err != nil {
		return err
	}
	var ms []Mutation
	for _, m := range allMutations() {
		if re.MatchString(m.ID) {
			ms = append(ms, m)
		}
	}
	if list {
		for _, m := range ms {
			fmt.Printf("%-34s %-44s %s\n", m.ID, m.File, m.What)
		}
		return nil
	}
	// Every target first: a list that no longer applies fails before any
	// time is spent.
	for _, m := range ms {
		if _, err := m.Apply(root); err != nil {
			return err
		}
	}
	cs, err := selectChecks(checkList)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &runner{root: root, checks: cs, partial: len(cs) < len(checks()), all: all, verbose: verbose, ctx: ctx}
	if err := r.prepare(); err != nil {
		return err
	}
	start := time.Now()
	results := r.runAll(ms, jobs)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return report(os.Stdout, results, time.Since(start))
}
