package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// helpLearnings is the part of the help about the team's learnings.
const helpLearnings = `
The team's learnings (R-LEARN-1, R-LEARN-2). When CRITICIZER_LEARN_AFTER
(default 3) distinct readers marked one rule's findings wrong in one
repository, and fewer marked them useful, the rule is proposed for that
repository. An accepted learning leaves the rule's findings out of the
repository's later reviews, errors aside, and each email says how many;
the change's author's own votes never count. A decision is final.

  criticizer learnings list [--all]    proposed and decided learnings (--all: those still counting too)
  criticizer learnings accept <id>     leave the rule out of that repository's reviews
  criticizer learnings reject <id>     keep it; the learning is never proposed again
`

func (c *cli) learningsList(ctx context.Context, args []string) error {
	var all bool
	if _, _, err := parse("learnings list", args, 0, func(fs *flag.FlagSet) { fs.BoolVar(&all, "all", false, "") }); err != nil {
		return err
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	ls, err := o.Learnings.List(ctx)
	if err != nil {
		return err
	}
	shown := []vote.Learning{}
	for _, l := range ls {
		if l = l.Classify(o.LearnAfter); all || l.State != vote.Counting {
			shown = append(shown, l)
		}
	}
	if c.json {
		return c.emit(shown)
	}
	if len(shown) == 0 {
		fmt.Fprintf(c.out, "No learning is proposed (a rule needs %d readers' wrong in one repository).\n", o.LearnAfter)
		return nil
	}
	tw := tabwriter.NewWriter(c.out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tREPOSITORY\tRULE\tWRONG\tUSEFUL\tDECIDED")
	for _, l := range shown {
		decided := "-"
		if !l.DecidedAt.IsZero() {
			decided = l.DecidedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", l.ID, l.State, l.Repository, l.Rule, l.Wrong, l.Useful, decided)
	}
	return tw.Flush()
}

func (c *cli) learningsDecide(ctx context.Context, verb string, st vote.LearningState, args []string) error {
	_, pos, err := parse("learnings "+verb, args, 1, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"learnings " + verb + ": give the learning's id (criticizer learnings list)"}
	}
	if _, ok := vote.SplitLearningID(pos[0]); !ok {
		return usageError{"learnings " + verb + ": " + pos[0] + " is not a learning's id (criticizer learnings list)"}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	l, err := vote.Decide(ctx, o.Learnings, o.LearnAfter, pos[0], st, o.Now())
	switch {
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("learning %s was decided already (criticizer learnings list)", pos[0])
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no learning %s (criticizer learnings list --all)", pos[0])
	case err != nil:
		return err
	}
	if c.json {
		return c.emit(l)
	}
	fmt.Fprintf(c.out, "%s %s: rule %s in %s (%d wrong, %d useful)\n", l.State, l.ID, l.Rule, l.Repository, l.Wrong, l.Useful)
	return nil
}
