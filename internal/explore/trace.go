package explore

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A trace file is a counterexample written so it replays: a header of
// "# key: value" lines naming the scenario, the variant and the rule the
// trace breaks, then one action label a line. TestExplore_Regressions
// replays every file under testdata/counterexamples.
//
//	# scenario: lost-answer-two-reviews
//	# variant: main-watermark
//	# breaks: duplicate
//	deliver notify-1
//	step notify#1 ok
//	...

// TraceFile is a counterexample read back.
type TraceFile struct {
	Scenario, Variant string
	// Breaks is the rule the trace breaks; "" for a trace that must now
	// replay with no violation (a bug found, then fixed).
	Breaks  string
	Actions []Action
}

// WriteTrace writes v's trace into dir as <scenario>[.<variant>].<rule>.trace
// and returns the file's path: the actions the explorer chose; the
// healing run that followed them is the same on every replay.
func WriteTrace(dir string, sc Scenario, variant *Variant, v *Violation) (string, error) {
	name := sc.Name
	vn := ""
	if variant != nil {
		vn = variant.Name
		name += "." + vn
	}
	path := filepath.Join(dir, name+"."+v.Rule+".trace")
	var b strings.Builder
	fmt.Fprintf(&b, "# scenario: %s\n# variant: %s\n# breaks: %s\n# %s\n", sc.Name, vn, v.Rule, v.Message)
	for _, a := range v.Trace[:v.Depth] {
		b.WriteString(a.Label())
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "# then the healing run: no more faults, a fair schedule, until quiet (%d actions)\n", len(v.Trace)-v.Depth)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// ReadTrace reads a trace file.
func ReadTrace(path string) (TraceFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return TraceFile{}, err
	}
	defer f.Close()
	var t TraceFile
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			k, v, _ := strings.Cut(rest, ":")
			switch strings.TrimSpace(k) {
			case "scenario":
				t.Scenario = strings.TrimSpace(v)
			case "variant":
				t.Variant = strings.TrimSpace(v)
			case "breaks":
				t.Breaks = strings.TrimSpace(v)
			}
			continue
		}
		a, err := ParseLabel(line)
		if err != nil {
			return TraceFile{}, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		t.Actions = append(t.Actions, a)
	}
	return t, s.Err()
}

// ParseLabel reads an action from its label (Action.Label).
func ParseLabel(l string) (Action, error) {
	f := strings.Fields(l)
	if len(f) == 0 {
		return Action{}, fmt.Errorf("empty action")
	}
	switch k := Kind(f[0]); k {
	case Sweep:
		return Action{Kind: Sweep}, nil
	case Step:
		if len(f) != 3 {
			return Action{}, fmt.Errorf("step wants a process and an outcome: %q", l)
		}
		for _, o := range []Outcome{OK, FailBefore, AnswerLost, Slow, Refused} {
			if o.String() == f[2] {
				return Action{Kind: Step, Target: f[1], Out: o}, nil
			}
		}
		return Action{}, fmt.Errorf("unknown outcome %q", f[2])
	case Deliver, Publish, Again, Tick, Kill, Redrive, Post, Overrun:
		if len(f) != 2 {
			return Action{}, fmt.Errorf("%s wants one target: %q", k, l)
		}
		return Action{Kind: k, Target: f[1]}, nil
	}
	return Action{}, fmt.Errorf("unknown action %q", l)
}
