// Command explore runs the exhaustive exploration of the delivery protocol
// (internal/explore): every scenario, every ordering of the explorer's
// choices within the scenario's bounds, the real notify, feedback and
// sweeper code on the in-memory store (with intake, fetch and llm in
// front of them in the intake scenarios). It prints the figures of each
// scenario and of the variants that must be caught, and exits non-zero
// on a violation of the protocol as built, a variant not caught, or a
// scenario left incomplete (stopped at -max-states before its bounds were
// explored: a proof of nothing beyond the states it reached).
//
//	go run ./cmd/explore                 the deep run (make explore)
//	go run ./cmd/explore -shallow        the bounds make test uses
//	go run ./cmd/explore -scenario send-faults -variant main-watermark -write internal/explore/testdata/counterexamples
//	go run ./cmd/explore -shallow -variant as-built -first -order requeue-race    what make mutate runs
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/explore"
)

func main() {
	scenario := flag.String("scenario", "", "explore only this scenario")
	variant := flag.String("variant", "", "explore only this variant (\"as-built\" for none of them)")
	shallow := flag.Bool("shallow", false, "the bounds of make test instead of the deeper ones")
	maxStates := flag.Int("max-states", 2_000_000, "stop a scenario after this many distinct states")
	write := flag.String("write", "", "write each counterexample found as a trace file into this directory")
	first := flag.Bool("first", false, "stop at the first violation of the protocol as built: no shortest trace, no further scenario")
	order := flag.String("order", "", "comma-separated scenarios to explore before the others")
	flag.Parse()
	o := options{only: *scenario, variant: *variant, shallow: *shallow, maxStates: *maxStates, write: *write, first: *first}
	if *order != "" {
		o.order = strings.Split(*order, ",")
	}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "explore:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	only, variant string
	shallow       bool
	maxStates     int
	write         string
	first         bool
	order         []string
}

// ordered is the scenarios, those named in order first.
func ordered(order []string) []explore.Scenario {
	var out []explore.Scenario
	for _, name := range order {
		if sc, ok := explore.ScenarioByName(name); ok {
			out = append(out, sc)
		}
	}
	for _, sc := range explore.Scenarios() {
		if !slices.Contains(order, sc.Name) {
			out = append(out, sc)
		}
	}
	return out
}

func run(out io.Writer, opt options) error {
	only, variant, shallow, maxStates, write := opt.only, opt.variant, opt.shallow, opt.maxStates, opt.write
	start := time.Now()
	var total explore.Stats
	failed, incomplete := 0, 0
	for _, sc := range ordered(opt.order) {
		if only != "" && sc.Name != only {
			continue
		}
		if !shallow {
			sc = sc.Deep()
		}
		var vs []*explore.Variant
		if variant == "" || variant == "as-built" {
			vs = append(vs, nil)
		}
		if variant != "as-built" {
			for _, v := range explore.Variants() {
				if (variant == "" || v.Name == variant) && slices.Contains(v.CaughtIn, sc.Name) {
					vs = append(vs, v)
				}
			}
		}
		for _, v := range vs {
			// A variant is explored for the first breach of the property it
			// stands for (most: a duplicate email); the protocol as built
			// for every property.
			o := explore.Options{MaxStates: maxStates, Shortest: !opt.first}
			if v != nil {
				o.Properties = []string{v.Breaks()}
			}
			st, bad := explore.Explore(sc, v, o)
			fmt.Fprintln(out, st)
			total.States += st.States
			total.Transitions += st.Transitions
			total.Revisits += st.Revisits
			total.Slept += st.Slept
			total.MaxDepth = max(total.MaxDepth, st.MaxDepth)
			switch {
			case bad != nil && v == nil:
				failed++
				fmt.Fprintf(out, "\nVIOLATION in %s: %v\n%s\n", sc.Name, bad, explore.Explain(sc, v, bad.Trace))
			case bad != nil && v != nil && only != "":
				fmt.Fprintf(out, "\n%v (%d explored actions, %d in all)\n%s\n", bad, bad.Depth, len(bad.Trace), explore.Explain(sc, v, bad.Trace))
			case bad == nil && v != nil:
				failed++
				fmt.Fprintf(out, "\nNOT CAUGHT: variant %s found nothing in %s\n", v.Name, sc.Name)
			case bad == nil && !st.Complete:
				// Stopped at the state cap: the bounds were not explored,
				// so nothing is proved of them.
				incomplete++
				fmt.Fprintf(out, "\nINCOMPLETE: %s stopped at %d states before its bounds were explored\n", sc.Name, st.States)
			}
			if bad != nil && write != "" {
				path, err := explore.WriteTrace(write, sc, v, bad)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, "wrote", path)
			}
			if opt.first && failed > 0 {
				return fmt.Errorf("violation in %s", sc.Name)
			}
		}
	}
	fmt.Fprintf(out, "\ntotal: %d distinct states, %d transitions, %d revisits, %d slept, max depth %d, %s\n",
		total.States, total.Transitions, total.Revisits, total.Slept, total.MaxDepth, time.Since(start).Round(time.Second))
	switch {
	case failed > 0:
		return fmt.Errorf("%d exploration(s) failed", failed)
	case incomplete > 0:
		return fmt.Errorf("%d exploration(s) incomplete: raise -max-states or narrow their bounds", incomplete)
	}
	return nil
}
