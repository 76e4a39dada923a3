// Package eval measures a critic on a set of changes with planted,
// documented bugs (cases/*.json): which bugs it finds, which it misses, how
// many findings are false, and what it cost in tokens. `make eval` prints
// the table for the offline critic and for a recording stand-in of an
// OpenAI-compatible model (which proves the harness); pointed at Bedrock or
// OpenAI (docs/eval.md) it measures a real model.
package eval

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
)

//go:embed cases/*.json
var casesFS embed.FS

// Case is one change with its planted bugs.
type Case struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Files []struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	} `json:"files"`
	Bugs []Bug `json:"bugs"`
	// StandIn is what the recording stand-in answers for this case.
	StandIn string `json:"standin"`
}

// Bug is a planted bug: a file, a line of the new file, and what it is.
type Bug struct {
	File string `json:"file"`
	Line int    `json:"line"`
	What string `json:"what"`
}

// Cases are the embedded cases, by name.
func Cases() ([]Case, error) {
	var out []Case
	err := fs.WalkDir(casesFS, "cases", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := casesFS.ReadFile(p)
		if err != nil {
			return err
		}
		var c Case
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
		return nil
	})
	slices.SortFunc(out, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// Diff is the case as a unified diff: each file added whole, so the
// planted lines are the new file's line numbers.
func (c Case) Diff() string {
	var b strings.Builder
	for _, f := range c.Files {
		lines := strings.SplitAfter(f.Content, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", f.Path, f.Path, f.Path, len(lines))
		for _, l := range lines {
			b.WriteString("+" + l)
		}
	}
	return b.String()
}

// Result is a critic's score on one case.
type Result struct {
	Case                   string
	Found, Missed, False   int
	InputTokens, OutTokens int
	Err                    error
}

// Near is how far (lines) a finding may be from a planted bug and still
// find it: models point at the statement, the bug may span two lines.
const Near = 2

// Run reviews every case with c and scores it.
func Run(ctx context.Context, c critic.Critic, cases []Case) []Result {
	var out []Result
	for _, cs := range cases {
		r := Result{Case: cs.Name}
		crit, err := c.Review(ctx, critic.Input{ChangelistID: "eval/" + cs.Name, ReviewVersion: 1, Title: cs.Name, Author: "eval", Diff: cs.Diff()})
		if err != nil {
			r.Err = err
			out = append(out, r)
			continue
		}
		if crit.Usage != nil {
			r.InputTokens, r.OutTokens = crit.Usage.InputTokens, crit.Usage.OutputTokens
		}
		hit := make([]bool, len(cs.Bugs))
		for _, f := range crit.Findings {
			// A finding finds the nearest planted bug within Near lines of
			// it (a file-level finding, a file-level bug), at most one.
			best, dist := -1, Near+1
			for i, b := range cs.Bugs {
				switch {
				case f.File != b.File:
				case b.Line == 0 && f.Line == 0:
					best, dist = i, 0
				case f.Line > 0 && abs(f.Line-b.Line) < dist:
					best, dist = i, abs(f.Line-b.Line)
				}
			}
			if best < 0 {
				r.False++
				continue
			}
			hit[best] = true
		}
		for _, h := range hit {
			if h {
				r.Found++
			} else {
				r.Missed++
			}
		}
		out = append(out, r)
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Print writes the table for one critic, with totals.
func Print(w io.Writer, critic string, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "CRITIC\tCASE\tFOUND\tMISSED\tFALSE\tTOKENS IN\tTOKENS OUT\n")
	var t Result
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\terror: %v\t\t\t\t\n", critic, r.Case, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", critic, r.Case, r.Found, r.Missed, r.False, r.InputTokens, r.OutTokens)
		t.Found, t.Missed, t.False, t.InputTokens, t.OutTokens = t.Found+r.Found, t.Missed+r.Missed, t.False+r.False, t.InputTokens+r.InputTokens, t.OutTokens+r.OutTokens
	}
	fmt.Fprintf(tw, "%s\ttotal\t%d\t%d\t%d\t%d\t%d\n", critic, t.Found, t.Missed, t.False, t.InputTokens, t.OutTokens)
	tw.Flush()
}

// StandIn starts the recording stand-in of an OpenAI-compatible model
// that answers each case's request with the case's recorded answer; Close
// it when done.
func StandIn(cases []Case) *critictest.StandIn {
	s := critictest.NewStandIn()
	s.Reply = func(r critictest.Request) (int, []byte) {
		for _, c := range cases {
			if strings.Contains(r.User, "Changelist: eval/"+c.Name+"\n") {
				// Tokens as a model would bill them: about 4 bytes each.
				return http.StatusOK, critictest.Completion(c.StandIn, "stop", critictest.Tokens(r), len(c.StandIn)/4)
			}
		}
		return http.StatusNotFound, []byte(`{"error":{"message":"no such case","type":"invalid_request_error"}}`)
	}
	return s
}
