package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/ops"
)

// helpDeliveries is the part of the help about delivery rows held for
// reconciliation.
const helpDeliveries = `
Deliveries held for reconciliation. A send whose answer was lost (a timeout,
a dropped connection, a 5xx after SES may have accepted it) is never resent
blindly: the row stays 'sending' until an SES event names it (then it is
marked sent) or the SES evidence path has caught up past it with no event
naming it (then it is sent again, or, under CRITICIZER_UNCERTAIN_SEND=hold,
kept for you). While the evidence path is stalled, or under hold, such a
row is held, its job reads needs_intervention and the HeldDeliveries and
EvidenceLag alarms fire. A row marked sent that the evidence path never
confirmed moves to 'reconciling' (OrderingViolations alarm). A reader's daily
digest is such a row too (its id starts g_, its JOB column reads "digest"
and the date): held, shown and settled the same way.

  criticizer deliveries held          the held rows, with what each waits for
  criticizer deliveries show <id>     one row: its evidence, its audit trail, the evidence path
  criticizer evidence show            the evidence path: newest event, drain time and its lag
  criticizer deliveries resolve <id> --note "<how you know it was delivered>"
               the message did go out: mark the row sent, never send it again
  criticizer deliveries requeue <id> --note "<how you know it was not>"
               it did not: clear the sent markers and send it again
A note is required and is recorded with the row; the job is finalized by the
notifier afterwards. Check SES first (the account's sending statistics, the
message in the recipient's mailbox or your mail logs): resolving a row that
was not delivered loses an email, requeueing one that was sends a duplicate.
`

func (c *cli) deliveriesHeld(ctx context.Context, args []string) error {
	if _, _, err := parse("deliveries held", args, 0, func(*flag.FlagSet) {}); err != nil {
		return err
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	held, err := o.HeldDeliveries(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return c.emit(held)
	}
	if len(held) == 0 {
		fmt.Fprintln(c.out, "No delivery is held.")
		return nil
	}
	tw := tabwriter.NewWriter(c.out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "DELIVERY\tJOB\tSTATUS\tSENT BY\tWHY")
	for _, h := range held {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.DeliveryID, h.Job(), h.Status, h.SentBy, h.Why)
	}
	return tw.Flush()
}

func (c *cli) deliveriesShow(ctx context.Context, args []string) error {
	_, pos, err := parse("deliveries show", args, 1, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"deliveries show: give the delivery id"}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	rep, err := o.Delivery(ctx, pos[0])
	if err != nil {
		return err
	}
	return c.emitIndented(rep)
}

func (c *cli) deliveriesSettle(ctx context.Context, verb string, v ops.Verdict, args []string) error {
	var note string
	_, pos, err := parse("deliveries "+verb, args, 1, func(fs *flag.FlagSet) { fs.StringVar(&note, "note", "", "") })
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"deliveries " + verb + ": give the delivery id"}
	}
	if strings.TrimSpace(note) == "" {
		return usageError{"deliveries " + verb + ": " + ops.ErrNoNote.Error()}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	row, err := o.Settle(ctx, pos[0], v, note, operator())
	if err != nil {
		return err
	}
	if row.IsDigest() {
		fmt.Fprintf(c.out, "%s: %s (digest %s); the note is recorded and notify will finish the digest\n", verb, row.ID, row.Period)
		return nil
	}
	fmt.Fprintf(c.out, "%s: %s (job %s); the note is recorded and notify will finalize the job\n", verb, row.ID, row.JobID)
	return nil
}

func (c *cli) evidenceShow(ctx context.Context, args []string) error {
	if _, _, err := parse("evidence show", args, 0, func(*flag.FlagSet) {}); err != nil {
		return err
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	v, err := o.EvidencePath(ctx)
	if err != nil {
		return err
	}
	return c.emitIndented(v)
}

// operator names who ran the command, for the audit trail: $CRITICIZER_OPERATOR,
// else the login name.
func operator() string {
	for _, k := range []string{"CRITICIZER_OPERATOR", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}
