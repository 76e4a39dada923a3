package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// Before any claim a row may be settled without a send: its reader's
// domain is not allowed, they left or are suppressed, they muted the
// changelist, the version holds nothing new for them, they read it in
// their daily digest. Each of those is a gate, a unit in its own file
// (gate_*.go) that answers a row's decision; the settle loop here asks
// them in order and carries each decision out with one conditional
// write, only on a row never sent (delivery.Row.Unsent), the row read
// again when the write loses to a change of it. A deployment without a
// feature does not list its gate (NewGates); a gate is built with every
// dependency it needs, or not at all.

// Gate is one reason a row may be settled without a send (the *Gate
// types of this package, built by their constructors).
type Gate interface {
	// rank is the gate's place in the order gates are asked: a row a
	// gate settles is not asked about again, so which answer wins is
	// that order's (an unsubscribe before a digest, a mute before a
	// quiet settlement).
	rank() int
	name() string
}

// versionGate is a gate of a version's run.
type versionGate interface {
	Gate
	// decide reads, once a run and after the gates before it settled
	// their rows, what the gate needs to answer the run's unsent rows,
	// and returns its answer for one row; nil: nothing for it to settle
	// in this run.
	decide(ctx context.Context, run *Run) (decider, error)
}

// decider answers one unsent row: the zero Decision lets it pass.
type decider func(r delivery.VersionRow) Decision

// Decision is what a gate makes of a row: settle it as Status, without a
// send, for Reason.
type Decision struct {
	Status delivery.Status
	Reason string
	// StandsOn, for a quiet settlement, is the id of the row whose
	// content reaching the reader it rests on: the write is one
	// transaction that holds that row to still carrying it (store
	// SettleQuiet, R-QUIET-4).
	StandsOn string
	// write, if set, is the gate's own conditional write of the row
	// (a digest's: store SettleDigested); by default the row is skipped
	// (store Skip) or, with StandsOn, settled quietly.
	write func(ctx context.Context, id string) (delivery.Row, error)
	// then, if set, follows a write that took (the row as it is now has
	// Status): the gate's log line and metric, and what comes after (a
	// digest's entry).
	then func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error)
}

// Run is one notify run of a version, as the gates see it.
type Run struct {
	Job      job.Job
	Critique critic.Critique
	// Rows are the version's rows, updated in place as they are settled.
	Rows []delivery.VersionRow
	// Standings are every recipient's suppression and preference record,
	// read once before any row was rendered (nil: the notifier keeps no
	// such records).
	Standings map[string]delivery.Standing
	// Wait are the rows to leave unclaimed for now: a newer version may
	// still reach their readers (the quiet gate's, R-QUIET-3).
	Wait waiting

	log        *slog.Logger
	jobs       jobReader
	deliveries store.Deliveries
}

// jobReader reads a job (the quiet gate reads newer versions').
type jobReader interface {
	Get(ctx context.Context, id job.ID) (job.Job, error)
}

// anyUnsent reports whether some row of the run was never sent.
func (run *Run) anyUnsent() bool {
	for _, r := range run.Rows {
		if r.Unsent() {
			return true
		}
	}
	return false
}

// Gates are the gates a deployment runs, in the order they are asked.
// The zero Gates settles nothing before a claim: every row is mailed.
type Gates struct {
	versions []versionGate
	reply    *ReplyGate
	// The gates some other path asks too: a digest's close (domain,
	// mute), the rendering of a row (quiet: R-QUIET-2 per reader).
	domain *DomainGate
	mute   *MuteGate
	quiet  *QuietGate
	digest *DigestGate
}

// NewGates lists a deployment's gates: each at most once, in the order
// domain, standing, mute, quiet, digest; the reply gate, which answers a
// reply's confirmation rather than a version's rows, anywhere.
func NewGates(gates ...Gate) (Gates, error) {
	var g Gates
	last := -1
	for _, x := range gates {
		if isNil(x) {
			return Gates{}, errors.New("notify gates: a nil gate (its constructor's error ignored?)")
		}
		switch x := x.(type) {
		case *ReplyGate:
			if g.reply != nil {
				return Gates{}, errors.New("notify gates: the reply gate listed twice")
			}
			g.reply = x
			continue
		case versionGate:
			if x.rank() <= last {
				return Gates{}, fmt.Errorf("notify gates: %s listed twice or out of order (domain, standing, mute, quiet, digest)", x.name())
			}
			last = x.rank()
			g.versions = append(g.versions, x)
		default:
			return Gates{}, fmt.Errorf("notify gates: %T is not a gate", x)
		}
		switch x := x.(type) {
		case *DomainGate:
			g.domain = x
		case *MuteGate:
			g.mute = x
		case *QuietGate:
			g.quiet = x
		case *DigestGate:
			g.digest = x
		}
	}
	return g, nil
}

// isNil reports a gate that is nil, or a nil pointer to one: what a
// constructor returns with its error.
func isNil(g Gate) bool {
	switch g := g.(type) {
	case nil:
		return true
	case *DomainGate:
		return g == nil
	case *StandingGate:
		return g == nil
	case *MuteGate:
		return g == nil
	case *QuietGate:
		return g == nil
	case *DigestGate:
		return g == nil
	case *ReplyGate:
		return g == nil
	}
	return false
}

// MustGates is NewGates for a list known to be right (tests, the
// explorer); it panics otherwise.
func MustGates(gates ...Gate) Gates {
	g, err := NewGates(gates...)
	if err != nil {
		panic(err)
	}
	return g
}

// Quiet is the quiet gate, if listed.
func (g Gates) Quiet() (*QuietGate, bool) { return g.quiet, g.quiet != nil }

// settle asks each of the version's gates, in order, for its decision on
// every row never sent, and settles each decided row with one
// conditional write. A quiet settlement that loses the row it stood on
// (store.ErrNotReached: a Reject or a bounce undid it since it was read)
// has its gate asked again from the rows as they are now, at most three
// times.
func (n *Notify) settle(ctx context.Context, run *Run) error {
	for _, g := range n.Gates.versions {
		if err := n.settleGate(ctx, run, g); err != nil {
			return err
		}
	}
	return nil
}

func (n *Notify) settleGate(ctx context.Context, run *Run, g versionGate) error {
	for range 3 {
		decide, err := g.decide(ctx, run)
		if err != nil || decide == nil {
			return err
		}
		err = n.settleRows(ctx, run, decide)
		if !errors.Is(err, store.ErrNotReached) {
			return err
		}
		n.Log.InfoContext(ctx, "a quiet settlement lost the row it stood on; deciding again", "job_id", run.Job.ID, "error", err)
	}
	return retry.Transient(retry.Conflict, fmt.Errorf("job %s: the rows its quiet settlements stand on keep changing", run.Job.ID))
}

// settleRows is the one loop: every row never sent, the gate's answer,
// one write. A row claimed or settled since it was read keeps its course
// and is taken as it is now.
func (n *Notify) settleRows(ctx context.Context, run *Run, decide decider) error {
	for i, r := range run.Rows {
		if !r.Unsent() {
			continue
		}
		d := decide(r)
		if d.Status == "" {
			continue
		}
		got, err := n.settleRow(ctx, r.Row, d)
		if err != nil {
			return err
		}
		v, err := delivery.AsVersion(got)
		if err != nil {
			return retry.Permanent(retry.RuntimeBug, err)
		}
		if v.Status == d.Status && d.then != nil {
			if v, err = d.then(ctx, v); err != nil {
				run.Rows[i] = v
				return err
			}
		}
		run.Rows[i] = v
	}
	return nil
}

// settleRow carries out one decision on row r with one conditional write
// (only while the row was never sent), and returns the row as it is now:
// read again when the write lost to a change of it.
func (n *Notify) settleRow(ctx context.Context, r delivery.Row, d Decision) (delivery.Row, error) {
	var got delivery.Row
	var err error
	switch {
	case d.write != nil:
		got, err = d.write(ctx, r.ID)
	case d.StandsOn != "":
		got, err = n.Deliveries.SettleQuiet(ctx, r.ID, d.Status, d.Reason, d.StandsOn)
	default:
		got, err = n.Deliveries.Skip(ctx, r.ID, d.Status, d.Reason)
	}
	// Claimed or settled since we read it: take it as it is now.
	got, _, err = n.current(ctx, r.ID, got, err)
	return got, err
}
