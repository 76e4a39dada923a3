package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/digest"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// DigestConfig is what the digest gate is built from (NewDigestGate).
// Every field is required.
type DigestConfig struct {
	// Digests keeps the daily digests' rows (store.Digests, in the
	// deliveries table).
	Digests store.Digests
	// Standings reads a reader's preference record when their digest
	// moves on (the rare path: a run has the standings it read).
	Standings Standings
	// Clock is the clock digest periods are judged by (which digest a
	// critique goes into, whether one is due): the notifier's, but for
	// the tests that bring a reader's digest hour about without moving
	// the leases and evidence times the notifier's governs.
	Clock func() time.Time
}

// DigestGate settles into their readers' daily digests the rows of a
// version whose reader does not get its critique at once (R-DIGEST-2,
// digest.Instant: daily delivery, or mixed without an error), and keeps
// the digests: the notifier closes and sends them (notify_digest.go). A
// deployment that mails every critique at once lists no digest gate.
type DigestGate struct {
	digests   store.Digests
	standings Standings
	now       func() time.Time
}

// NewDigestGate builds the digest gate.
func NewDigestGate(c DigestConfig) (*DigestGate, error) {
	if c.Digests == nil || c.Standings == nil || c.Clock == nil {
		return nil, errors.New("digest gate: the digests, the readers' standings and a clock are required")
	}
	return &DigestGate{digests: c.Digests, standings: c.Standings, now: c.Clock}, nil
}

func (*DigestGate) rank() int    { return 4 }
func (*DigestGate) name() string { return "digest" }

// decide first makes sure every row digested before — by a run that
// stopped halfway — has its entry in a digest: the job is finalized only
// after that, so a succeeded job's digested rows are each held by a
// digest. Then it answers the rows left to send (not waiting for a newer
// version) whose reader does not get this critique at once: each is
// settled digested, naming the digest of its reader's next period (one
// conditional write: only a row never sent), and its entry added there.
func (g *DigestGate) decide(ctx context.Context, run *Run) (decider, error) {
	for i, r := range run.Rows {
		if r.Status != delivery.StatusDigested {
			continue
		}
		got, err := g.ensureEntry(ctx, run, r)
		run.Rows[i] = got
		if err != nil {
			return nil, err
		}
	}
	return func(r delivery.VersionRow) Decision {
		if run.Wait.holds(r.ID) {
			return Decision{} // a newer version may still reach its recipient (R-QUIET-3)
		}
		st, ok := run.Standings[unsubscribe.RecipientID(r.Recipient)]
		if !ok || digest.Instant(st.Preferences.Mode, r.Message.Severity) {
			return Decision{}
		}
		p := st.Preferences
		per := digest.Next(p, g.now())
		into := delivery.NewDigestRow(r.Recipient, per.Due, per.Date)
		return Decision{Status: delivery.StatusDigested, Reason: delivery.DigestReason(per.Date),
			write: func(ctx context.Context, id string) (delivery.Row, error) {
				return g.digests.SettleDigested(ctx, id, delivery.Row{ID: into.ID, Period: into.Period})
			},
			then: func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error) {
				run.log.InfoContext(ctx, "critique goes into the reader's daily digest", "delivery_id", got.ID, "job_id", got.JobID,
					"digest_id", got.Digest, "period", got.Period, "mode", p.Mode)
				obs.Metric(ctx, run.log, map[string]string{"Mode": string(p.Mode)}, map[string]float64{"Digested": 1})
				return g.ensureEntry(ctx, run, got)
			}}
	}, nil
}

// ensureEntry makes sure a digested row's entry is in a digest: the one
// it names, created open if need be; or, if that one closed without it
// (the critique came after the digest was closed) or is full, the
// reader's next, the row moved there first. The row is the one source
// of truth of where its entry goes, and moves only from a digest that
// can no longer hold it, so the entry is held by one digest, once.
func (g *DigestGate) ensureEntry(ctx context.Context, run *Run, r delivery.VersionRow) (delivery.VersionRow, error) {
	for range 4 {
		due, ok := delivery.DigestDue(r.Digest)
		if !ok {
			return r, retry.Permanent(retry.RuntimeBug, fmt.Errorf("delivery %s is digested into %q, not a digest", r.ID, r.Digest))
		}
		d := delivery.DigestRow{Row: delivery.Row{ID: r.Digest, Recipient: r.Recipient, Period: r.Period, DueAt: due}}
		_, err := g.digests.AddToDigest(ctx, d.Row, r.ID, digest.MaxEntries)
		if !errors.Is(err, store.ErrConflict) {
			return r, err
		}
		// Closed without it, or full: the next period.
		p, err := g.preferences(ctx, r.Recipient)
		if err != nil {
			return r, err
		}
		next := digest.After(p, due, g.now())
		to := delivery.NewDigestRow(r.Recipient, next.Due, next.Date)
		moved, err := g.digests.MoveDigested(ctx, r.ID, r.Digest, delivery.Row{ID: to.ID, Period: to.Period})
		if errors.Is(err, store.ErrConflict) {
			moved, err = run.deliveries.Get(ctx, r.ID)
		}
		if err != nil {
			return r, err
		}
		run.log.InfoContext(ctx, "the digest was closed (or full) before the critique got in; it goes into the next",
			"delivery_id", r.ID, "from", r.Digest, "to", moved.Digest)
		if r, err = delivery.AsVersion(moved); err != nil {
			return r, retry.Permanent(retry.RuntimeBug, err)
		}
		if r.Status != delivery.StatusDigested {
			return r, nil
		}
	}
	return r, retry.Transient(retry.Conflict, fmt.Errorf("delivery %s: its digests kept closing", r.ID))
}

// preferences reads one reader's preference record (the rare path: most
// runs have it from the standings they read).
func (g *DigestGate) preferences(ctx context.Context, rcpt string) (prefs.Preferences, error) {
	id := unsubscribe.RecipientID(rcpt)
	st, err := g.standings.Standings(ctx, []string{id})
	if err != nil {
		return prefs.Preferences{}, err
	}
	if s, ok := st[id]; ok {
		return s.Preferences, nil
	}
	return prefs.Default().Normalized(), nil
}
