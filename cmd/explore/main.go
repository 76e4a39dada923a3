// Command explore runs the exhaustive exploration of the delivery protocol
// (internal/explore): every scenario, every ordering of the explorer's
// choices within the scenario's bounds, the real notify, feedback and
// sweeper code on the in-memory store (with intake, fetch and llm in
// front of them in the intake scenarios). It prints the figures of each
// scenario and of the variants that must be caught, and exits non-zero
// on a violation of the protocol as built (or a variant not caught).
//
//	go run ./cmd/explore                 the deep run (make explore)
//	go run ./cmd/explore -shallow        the bounds make test uses
//	go run ./cmd/explore -scenario send-faults -variant main-watermark -write internal/explore/testdata/counterexamples
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/criticizer/criticizer/internal/explore"
)

func main() {
	scenario := flag.String("scenario", "", "explore only this scenario")
	variant := flag.String("variant", "", "explore only this variant (\"as-built\" for none of them)")
	shallow := flag.Bool("shallow", false, "the bounds of make test instead of the deeper ones")
	maxStates := flag.Int("max-states", 2_000_000, "stop a scenario after this many distinct states")
	write := flag.String("write", "", "write each counterexample found as a trace file into this directory")
	flag.Parse()
	if err := run(*scenario, *variant, *shallow, *maxStates, *write); err != nil {
		fmt.Fprintln(os.Stderr, "explore:", err)
		os.Exit(1)
	}
}

func run(only, variant string, shallow bool, maxStates int, write string) error {
	start := time.Now()
	var total explore.Stats
	failed := 0
	for _, sc := range explore.Scenarios() {
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
			o := explore.Options{MaxStates: maxStates, Shortest: true}
			if v != nil {
				o.Properties = []string{v.Breaks()}
			}
			st, bad := explore.Explore(sc, v, o)
			fmt.Println(st)
			total.States += st.States
			total.Transitions += st.Transitions
			total.Revisits += st.Revisits
			total.Slept += st.Slept
			total.MaxDepth = max(total.MaxDepth, st.MaxDepth)
			switch {
			case bad != nil && v == nil:
				failed++
				fmt.Printf("\nVIOLATION %v\n%s\n", bad, explore.Explain(sc, v, bad.Trace))
			case bad != nil && v != nil && only != "":
				fmt.Printf("\n%v (%d explored actions, %d in all)\n%s\n", bad, bad.Depth, len(bad.Trace), explore.Explain(sc, v, bad.Trace))
			case bad == nil && v != nil:
				failed++
				fmt.Printf("\nNOT CAUGHT: variant %s found nothing in %s\n", v.Name, sc.Name)
			}
			if bad != nil && write != "" {
				path, err := explore.WriteTrace(write, sc, v, bad)
				if err != nil {
					return err
				}
				fmt.Println("wrote", path)
			}
		}
	}
	fmt.Printf("\ntotal: %d distinct states, %d transitions, %d revisits, %d slept, max depth %d, %s\n",
		total.States, total.Transitions, total.Revisits, total.Slept, total.MaxDepth, time.Since(start).Round(time.Second))
	if failed > 0 {
		return fmt.Errorf("%d exploration(s) failed", failed)
	}
	return nil
}
