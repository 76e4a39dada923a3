package eval

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/vote"
)

// RuleVotes is what readers said of one rule's findings (R-VOTE-2): the
// real-world side of the planted-bug table, one vote per finding of an
// email, the reader's latest choice.
type RuleVotes struct {
	Rule          string
	Useful, Wrong int
}

// TallyVotes counts votes by rule, most voted first (then by rule), so
// the rules readers said most about lead the report.
func TallyVotes(votes []vote.Vote) []RuleVotes {
	by := map[string]*RuleVotes{}
	for _, v := range votes {
		r := by[v.Rule]
		if r == nil {
			r = &RuleVotes{Rule: v.Rule}
			by[v.Rule] = r
		}
		switch v.Choice {
		case vote.Useful:
			r.Useful++
		case vote.Wrong:
			r.Wrong++
		}
	}
	out := make([]RuleVotes, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b RuleVotes) int {
		return cmp.Or(cmp.Compare(b.Useful+b.Wrong, a.Useful+a.Wrong), cmp.Compare(a.Rule, b.Rule))
	})
	return out
}

// PrintVotes writes the votes table: per rule, the useful and wrong votes
// and the share of useful ones, and a total.
func PrintVotes(w io.Writer, from string, rs []RuleVotes) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "VOTES (%s)\tUSEFUL\tWRONG\tUSEFUL %%\n", from)
	var t RuleVotes
	row := func(name string, r RuleVotes) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\n", name, r.Useful, r.Wrong, 100*float64(r.Useful)/float64(max(r.Useful+r.Wrong, 1)))
	}
	for _, r := range rs {
		row(r.Rule, r)
		t.Useful, t.Wrong = t.Useful+r.Useful, t.Wrong+r.Wrong
	}
	row("total", t)
	tw.Flush()
}
