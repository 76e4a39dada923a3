package explore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Variant changes the world's wiring, to check that the explorer finds
// what a known-bad protocol does wrong (a test that can fail), or to keep
// an earlier rule around for comparison.
type Variant struct {
	Name string
	Doc  string
	// CaughtIn names the scenarios whose exploration must find the
	// variant breaking its property.
	CaughtIn []string
	// Property is the property the variant breaks ("duplicate": a second
	// email, unless set).
	Property string
	// Apply rewires a freshly built world before anything runs.
	Apply func(w *world)
}

// Breaks is the property the variant must be caught breaking.
func (v *Variant) Breaks() string {
	if v.Property == "" {
		return "duplicate"
	}
	return v.Property
}

// Stats are the figures of one exploration.
type Stats struct {
	Scenario string
	Variant  string
	// States is how many distinct states were reached; Transitions how
	// many actions were taken; Revisits how many led to a state already
	// explored; Slept how many were skipped by partial-order reduction.
	States, Transitions, Revisits, Slept int
	// Leaves is how many paths ended (depth bound or nothing enabled) and
	// were healed and checked for liveness.
	Leaves   int
	MaxDepth int
	Elapsed  time.Duration
	// Complete is false when MaxStates cut the exploration short.
	Complete bool
}

func (s Stats) String() string {
	v := s.Variant
	if v == "" {
		v = "as built"
	}
	return fmt.Sprintf("%-28s %-22s states %7d  transitions %8d  revisits %7d  slept %6d  leaves %6d  depth %3d  %8s  complete=%t",
		s.Scenario, v, s.States, s.Transitions, s.Revisits, s.Slept, s.Leaves, s.MaxDepth, s.Elapsed.Round(time.Millisecond), s.Complete)
}

// Options bound an exploration.
type Options struct {
	// MaxStates stops the search after this many distinct states (0: no
	// bound); Stats.Complete then says false.
	MaxStates int
	// HealLimit bounds the actions of the healing run at each leaf.
	HealLimit int
	// KeepGoing explores on after the first violation (to count states).
	KeepGoing bool
	// Properties names the properties checked ("duplicate", "evidence",
	// "verdict", "liveness"); nil checks them all.
	Properties []string
	// Shortest searches, once a violation is found, for the shortest
	// one: explorations again at smaller depth bounds.
	Shortest    bool
	stopAtFirst bool
}

// checks reports whether the options check property p. The liveness
// check is asked for by its own name or by the rules it reports
// ("stuck", "lost"), as a variant names the rule it breaks.
func (o Options) checks(p string) bool {
	if o.Properties == nil {
		return true
	}
	for _, q := range o.Properties {
		if q == p || (p == "liveness" && (q == "stuck" || q == "lost")) {
			return true
		}
	}
	return false
}

// Explore visits every state of the scenario reachable within its
// bounds, depth first, checking the safety properties after every action
// and liveness at every leaf. It returns the figures and the shortest
// violation it found (nil if none).
func Explore(sc Scenario, v *Variant, o Options) (Stats, *Violation) {
	sc = sc.withDefaults()
	if o.HealLimit == 0 {
		o.HealLimit = 400
	}
	start := time.Now()
	x := run(sc, v, o)
	if x.found != nil && !o.KeepGoing && o.Shortest {
		// The shortest counterexample: a binary search on the depth
		// bound, each bound explored completely (the visited depths make
		// a bounded search miss nothing within its bound).
		lo := 0 // no violation within lo explored actions
		for lo+1 < x.found.Depth {
			mid := (lo + x.found.Depth) / 2
			bounded := sc
			bounded.MaxDepth = mid
			y := run(bounded, v, Options{HealLimit: o.HealLimit, MaxStates: o.MaxStates, Properties: o.Properties, stopAtFirst: true})
			if y.found != nil && y.found.Depth <= mid {
				x.found = y.found
			} else {
				lo = mid
			}
		}
	}
	x.stats.Elapsed = time.Since(start)
	return x.stats, x.found
}

func run(sc Scenario, v *Variant, o Options) *explorer {
	x := &explorer{sc: sc, v: v, o: o, visited: map[uint64]visit{}}
	x.stats.Scenario, x.stats.Complete = sc.Name, true
	if v != nil {
		x.stats.Variant = v.Name
	}
	w := x.replay(nil)
	x.visited[w.hash()] = visit{}
	x.stats.States++
	x.dfs(nil, w, nil)
	return x
}

type explorer struct {
	sc Scenario
	v  *Variant
	o  Options
	// visited holds the depth at which each state was explored: a state
	// reached again by a shorter path is explored again, so a depth
	// bound cuts no path short that a shorter one would not.
	visited map[uint64]visit
	stats   Stats
	found   *Violation
}

// dfs explores from w, which is in the state that prefix leads to, and
// owns w. sleep holds the actions already explored from an ancestor that
// commute with every action taken since: exploring them here again would
// only reach states reached before (sleep sets, Godefroid 1996).
func (x *explorer) dfs(prefix []Action, w *world, sleep []Action) {
	defer func() {
		if w != nil {
			w.close()
		}
	}()
	if len(prefix) > x.stats.MaxDepth {
		x.stats.MaxDepth = len(prefix)
	}
	if v := w.safety(x.o); v != nil {
		x.report(v, prefix, nil)
		return
	}
	acts := w.actions()
	if len(acts) == 0 || len(prefix) >= x.sc.MaxDepth {
		x.stats.Leaves++
		if healed, v := w.settle(x.o); v != nil {
			x.report(v, prefix, healed)
		}
		return
	}
	// Each action's footprint, read before any of them runs.
	fps := map[string]footprint{}
	for _, a := range acts {
		fps[a.Label()] = w.footprint(a)
	}
	for _, b := range sleep {
		if _, ok := fps[b.Label()]; !ok {
			fps[b.Label()] = w.footprint(b)
		}
	}
	var done []Action
	for _, a := range acts {
		if x.stop() {
			return
		}
		if asleep(sleep, a) {
			x.stats.Slept++
			continue
		}
		// Actions explored before a, from here or an ancestor, that
		// commute with a: after a they would only reach states reached
		// through them.
		var next []Action
		for _, b := range append(append([]Action(nil), sleep...), done...) {
			if independent(fps[b.Label()], fps[a.Label()]) {
				next = append(next, b)
			}
		}
		done = append(done, a)
		if w == nil {
			w = x.replay(prefix)
		}
		took, ok := w.apply(a)
		if !ok {
			panic(fmt.Sprintf("explore: enabled action %q did not apply", a.Label()))
		}
		x.stats.Transitions++
		path := append(append([]Action(nil), prefix...), took)
		if v := w.safety(x.o); v != nil {
			x.report(v, path, nil)
			w.close()
			w = nil
			continue
		}
		h := w.hash()
		seen, ok := x.visited[h]
		if ok && seen.depth <= len(path) && subset(seen.sleep, next) {
			// Explored before, from no deeper and with no more asleep.
			x.stats.Revisits++
			w.close()
			w = nil
			continue
		}
		if !ok {
			x.stats.States++
			seen = visit{depth: len(path), sleep: labelSet(next)}
		} else {
			// Explore again what the earlier visit left asleep.
			seen.depth = min(seen.depth, len(path))
			next = keep(next, seen.sleep)
			seen.sleep = labelSet(next)
		}
		x.visited[h] = seen
		x.dfs(path, w, next)
		w = nil
	}
}

// visit is what the explorer remembers of a state: the shallowest depth
// it was explored from, and the actions asleep then.
type visit struct {
	depth int
	sleep map[string]bool
}

func labelSet(as []Action) map[string]bool {
	m := make(map[string]bool, len(as))
	for _, a := range as {
		m[a.Label()] = true
	}
	return m
}

// subset reports whether every action asleep at the earlier visit is
// asleep now: then the earlier visit explored all that this one would.
func subset(earlier map[string]bool, now []Action) bool {
	cur := labelSet(now)
	for l := range earlier {
		if !cur[l] {
			return false
		}
	}
	return true
}

// keep returns the actions of as whose labels are in set.
func keep(as []Action, set map[string]bool) []Action {
	var out []Action
	for _, a := range as {
		if set[a.Label()] {
			out = append(out, a)
		}
	}
	return out
}

func asleep(sleep []Action, a Action) bool {
	for _, b := range sleep {
		if b.Label() == a.Label() {
			return true
		}
	}
	return false
}

func (x *explorer) stop() bool {
	if x.o.MaxStates > 0 && x.stats.States >= x.o.MaxStates {
		x.stats.Complete = false
		return true
	}
	return x.found != nil && (!x.o.KeepGoing || x.o.stopAtFirst)
}

// report keeps v if it is the shallowest violation yet: path is the
// explored part of its trace, healed the healing run that followed.
func (x *explorer) report(v *Violation, path, healed []Action) {
	v.Trace = append(append([]Action(nil), path...), healed...)
	v.Depth = len(path)
	if x.found == nil || v.Depth < x.found.Depth || (v.Depth == x.found.Depth && len(v.Trace) < len(x.found.Trace)) {
		x.found = v
	}
}

// replay builds a fresh world and takes prefix's actions in it.
func (x *explorer) replay(prefix []Action) *world {
	w := newWorld(x.sc, x.v)
	for _, a := range prefix {
		if _, ok := w.apply(a); !ok {
			w.close()
			panic(fmt.Sprintf("explore: replay: %q is not enabled", a.Label()))
		}
	}
	return w
}

// Replay takes trace's actions in a fresh world of the scenario, checking
// the properties as the explorer does; it returns the violation the trace
// leads to, nil if none. A trace that does not replay (an action not
// enabled where the trace takes it) is an error. The violation's trace
// carries this run's notes.
func Replay(sc Scenario, v *Variant, trace []Action, o Options) (*Violation, error) {
	sc = sc.withDefaults()
	w := newWorld(sc, v)
	defer w.close()
	var done []Action
	for i, a := range trace {
		took, ok := w.apply(a)
		if !ok {
			return nil, fmt.Errorf("explore: action %d, %q, is not enabled here", i+1, a.Label())
		}
		done = append(done, took)
		if bad := w.safety(o); bad != nil {
			bad.Trace = done
			return bad, nil
		}
	}
	if healed, bad := w.settle(o); bad != nil {
		bad.Trace = append(done, healed...)
		return bad, nil
	}
	return nil, nil
}

// Explain replays trace and writes, for each action, what it did and the
// rows after it: a counterexample people can read.
func Explain(sc Scenario, v *Variant, trace []Action) string {
	sc = sc.withDefaults()
	w := newWorld(sc, v)
	defer w.close()
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s", sc.Name)
	if v != nil {
		fmt.Fprintf(&b, ", variant %s", v.Name)
	}
	b.WriteString("\n")
	for i, a := range trace {
		took, ok := w.apply(a)
		if !ok {
			fmt.Fprintf(&b, "%3d. %s — not enabled here; the trace does not replay\n", i+1, a.Label())
			return b.String()
		}
		fmt.Fprintf(&b, "%3d. [%s] %s", i+1, w.now.Sub(epoch()), took.Label())
		if took.Note != "" {
			fmt.Fprintf(&b, "  (%s)", took.Note)
		}
		b.WriteString("\n")
		b.WriteString(w.rowsLine())
	}
	return b.String()
}

// rowsLine is the rows' states, one line.
func (w *world) rowsLine() string {
	var parts []string
	for _, id := range w.allRows() {
		r, err := w.outbox.Get(context.Background(), id)
		if err != nil {
			continue
		}
		s := fmt.Sprintf("%s=%s", shortRow(id), r.Status)
		if r.NotificationID != "" {
			s += "(" + r.NotificationID + ")"
		}
		parts = append(parts, s)
	}
	emails := map[string]int{}
	for _, m := range w.mails {
		if m.delivery != "" && m.fate.reaches() {
			emails[shortRow(m.delivery)]++
		}
	}
	return fmt.Sprintf("       rows: %s  emails: %v\n", strings.Join(parts, " "), emails)
}

// shortRow shortens a delivery id for display.
func shortRow(id string) string {
	if i := strings.LastIndex(id, "#"); i > 0 && len(id) > 40 {
		return id[:20] + "…" + id[i:]
	}
	return id
}
