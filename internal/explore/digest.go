package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	digestrules "github.com/criticizer/criticizer/internal/digest"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// digestScenarios are the worlds of the daily digest (R-DIGEST-*): a
// reader on daily delivery whose digest already holds one changelist's
// critique, a second changelist's notify on its way, and the digest's
// message due an hour on. Every order of the two is explored: the second
// notify before the digest closes, or stopped between settling its row
// into the digest and adding its entry (the store call fails) and tried
// again while the digest is being closed, sent or after; a sweep that
// hands the same digest to a second notifier; a send whose answer is
// lost. Each version must reach the reader exactly once, in one digest:
// never in two, never in none (digestSafety, digestLiveness).
func digestScenarios() []Scenario {
	return []Scenario{
		{Name: "digest-close", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"d@example.com"}, Digested: true},
			{Changelist: "cl2", Version: 1, Recipients: []string{"d@example.com"}}},
			Daily: []string{"d@example.com"}, DigestMessage: true, Notifiers: 2, MaxFaults: 1, SendFaults: []Outcome{AnswerLost},
			StoreFaults: []string{"outbox.AddToDigest"}, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 23, DeepDepth: 32},
	}
}

// digestDeepDepths are make explore's bounds of digestScenarios, those
// docs/chaos.md's figures were measured at.
func digestDeepDepths() map[string]int { return map[string]int{"digest-close": 32} }

// digestVariants are the digest protocols the explorer must find at
// fault: broken on purpose, each loses a version's critique.
func digestVariants() []*Variant {
	return []*Variant{
		{Name: "digest-close-unconditional", CaughtIn: []string{"digest-close"}, Property: "lost",
			Doc: "broken on purpose: a digest is closed whatever entries came in since it was read and rendered, " +
				"so an entry added in between is held by a digest whose email does not show it",
			Apply: func(w *world) { w.digests = closeAnyway{w.digests, w} }},
		{Name: "digest-refusal-taken-as-held", CaughtIn: []string{"digest-close"}, Property: "lost",
			Doc: "broken on purpose: a closed digest's refusal of an entry is taken for the entry held, " +
				"so a version that came after the close is in no digest",
			Apply: func(w *world) { w.digests = refusalIgnored{w.digests} }},
	}
}

// closeAnyway closes a digest on the entries it holds at the close, not
// those the notifier read.
type closeAnyway struct {
	store.Digests
	w *world
}

func (c closeAnyway) CloseDigest(ctx context.Context, id string, _ int, dc store.DigestClose) (delivery.Row, error) {
	return call(c.w, ctx, wr("outbox.CloseDigest", id), func() (delivery.Row, error) {
		r, err := c.w.outbox.Get(ctx, id)
		if err != nil {
			return r, err
		}
		return c.w.outbox.CloseDigest(ctx, id, len(r.Entries), dc)
	})
}

// refusalIgnored takes AddToDigest's refusal for success.
type refusalIgnored struct{ store.Digests }

func (r refusalIgnored) AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error) {
	got, err := r.Digests.AddToDigest(ctx, d, entry, max)
	if errors.Is(err, store.ErrConflict) {
		return got, nil
	}
	return got, err
}

// wireDigests puts the scenario's daily readers on daily delivery, at
// 10:00 UTC (their first digest is due an hour after the epoch), gives
// notify and the sweeper the digests' store, lists the digest rows the
// readers can have (three days') and queues each first digest's message
// (Scenario.DigestMessage).
func (w *world) wireDigests(gout outbox) {
	if len(w.sc.Daily) == 0 {
		return
	}
	for _, r := range w.sc.Daily {
		p := w.dailyPrefs()
		if _, err := w.rcpts.SavePreferences(context.Background(), unsubscribe.RecipientID(r), p); err != nil {
			panic(err)
		}
		per := digestrules.Next(p, epoch())
		for i := range 3 {
			id := delivery.DigestID(r, per.Due)
			w.digestIDs = append(w.digestIDs, id)
			if i == 0 && w.sc.DigestMessage {
				b, _ := json.Marshal(delivery.DigestMessage(id))
				w.notifyQ.add(w, "notify-digest", string(b), per.Due.Sub(w.now), time.Time{}, nil)
			}
			per = digestrules.Next(p, per.Due)
		}
	}
	w.digests = gout
	w.sweeper.Digests = gout
}

// dailyPrefs is a daily reader's record.
func (w *world) dailyPrefs() prefs.Preferences {
	p := prefs.Default()
	p.Mode, p.DigestHour = prefs.Daily, 10
	return p
}

// alreadyDigested is a job whose notify ran before the world starts:
// succeeded, each recipient's row settled into their first digest, which
// holds it (set up outside any process: no step of the world).
func (w *world) alreadyDigested(j job.Job) {
	ctx := context.Background()
	j.Stage, j.Status = job.StageDone, job.StatusSucceeded
	w.jobsMem.Put(j)
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	for _, r := range j.Recipients {
		per := digestrules.Next(w.dailyPrefs(), epoch())
		d := delivery.Row{ID: delivery.DigestID(r, per.Due), Recipient: r, Period: per.Date, DueAt: per.Due}
		row := delivery.Row{ID: delivery.ID(clKey, r, j.ReviewVersion), JobID: j.ID, ChangelistKey: clKey, Recipient: r,
			ReviewVersion: j.ReviewVersion, Status: delivery.StatusPending, Message: delivery.Message{Severity: "none"},
			CreatedAt: w.now, UpdatedAt: w.now}
		if _, _, err := w.outbox.Ensure(ctx, row); err != nil {
			panic(err)
		}
		if _, err := w.outbox.SettleDigested(ctx, row.ID, d); err != nil {
			panic(err)
		}
		if _, err := w.outbox.AddToDigest(ctx, d, row.ID, digestrules.MaxEntries); err != nil {
			panic(err)
		}
	}
}

// allRows are the version rows and the digest rows the world can have.
func (w *world) allRows() []string { return slices.Concat(w.rowIDs, w.digestIDs) }

// covered counts, per version row of a daily reader, the emails that
// reached the reader with its critique: its own, and each digest whose
// text shows its changelist at its version.
func (w *world) covered() map[string]int {
	n := map[string]int{}
	for _, js := range w.sc.Jobs {
		for _, rcpt := range js.Recipients {
			if !slices.Contains(w.sc.Daily, rcpt) {
				continue
			}
			id := delivery.ID(job.ChangelistKey("generic", js.Changelist), rcpt, js.Version)
			section := "== " + js.Changelist + " version " + strconv.Itoa(js.Version) + " =="
			n[id] += 0
			for _, m := range w.mails {
				if !m.fate.reaches() || m.to != rcpt {
					continue
				}
				if m.delivery == id || (strings.HasPrefix(m.delivery, "g_") && strings.Contains(m.text, section)) {
					n[id]++
				}
			}
		}
	}
	return n
}

// digestSafety checks after every step that no daily reader got a
// version's critique twice (in two digests, or in a digest and an email
// of its own) — "duplicate" — and that a job is succeeded only once each
// of its digested rows' entries is held by the digest its row names
// (R-OUTBOX-8: the digest carries the promise) — "verdict".
func (w *world) digestSafety(o Options) *Violation {
	if o.checks("duplicate") {
		for id, n := range w.covered() {
			if n > 1 {
				return &Violation{Rule: "duplicate", Message: fmt.Sprintf("the critique of %s reached its reader %d times", id, n)}
			}
		}
	}
	if !o.checks("verdict") {
		return nil
	}
	ctx := context.Background()
	for _, id := range w.jobIDs {
		j, err := w.jobsMem.Get(ctx, id)
		if err != nil || j.Status != job.StatusSucceeded {
			continue
		}
		for _, r := range w.rowsOf(j) {
			if r.Status != delivery.StatusDigested {
				continue
			}
			g, err := w.outbox.Get(ctx, r.Digest)
			if err != nil || !g.HasEntry(r.ID) {
				return &Violation{Rule: "verdict", Message: fmt.Sprintf("job %s succeeded with row %s digested into %s, which does not hold it", id, r.ID, r.Digest)}
			}
		}
	}
	return nil
}

// digestLiveness checks, once the world is quiet, that every version of a
// daily reader reached them exactly once, in a digest, unless a digest
// is visibly held for a person; and that every digest is settled.
func (w *world) digestLiveness() *Violation {
	ctx := context.Background()
	held := false
	for _, id := range w.digestIDs {
		g, err := w.outbox.Get(ctx, id)
		if err != nil {
			continue
		}
		switch {
		case g.Status == delivery.StatusFailedPermanent, g.Status == delivery.StatusReconciling:
			held = true
		case !g.Status.Done():
			return &Violation{Rule: "stuck", Message: fmt.Sprintf("digest %s is %s once the world is quiet (due %s)", id, g.Status, g.DueAt.Format(time.RFC3339))}
		}
	}
	for id, n := range w.covered() {
		if n == 0 && !held {
			r, _ := w.outbox.Get(ctx, id)
			return &Violation{Rule: "lost", Message: fmt.Sprintf("the critique of %s never reached its reader (row %s, digest %s)", id, r.Status, r.Digest)}
		}
	}
	return nil
}

// The digests' store behind gates.

func (o outbox) SettleDigested(ctx context.Context, id string, d delivery.Row) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.SettleDigested", id), func() (delivery.Row, error) { return o.s.SettleDigested(ctx, id, d) })
}
func (o outbox) MoveDigested(ctx context.Context, id, from string, to delivery.Row) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.MoveDigested", id), func() (delivery.Row, error) { return o.s.MoveDigested(ctx, id, from, to) })
}
func (o outbox) AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.AddToDigest", d.ID), func() (delivery.Row, error) { return o.s.AddToDigest(ctx, d, entry, max) })
}
func (o outbox) CloseDigest(ctx context.Context, id string, entries int, c store.DigestClose) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.CloseDigest", id), func() (delivery.Row, error) { return o.s.CloseDigest(ctx, id, entries, c) })
}
func (o outbox) DueDigests(ctx context.Context, dueBy time.Time, fn func(delivery.Row) error) error {
	_, err := call(o.w, ctx, rd("outbox.DueDigests", "*"), func() (struct{}, error) { return noval(o.s.DueDigests(ctx, dueBy, fn)) })
	return err
}
