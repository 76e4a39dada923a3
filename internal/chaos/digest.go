package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Daily digests in the campaign (R-DIGEST-*): one reader in five of the
// pool is on daily delivery, their digest at the current hour UTC, so
// the first one is due a day on. The campaign's digest clock (the stack's
// wire.Options.DigestNow; leases and evidence keep the real time) jumps a
// day once a tenth of the daily readers' versions are gathered: that
// digest comes due while faults are on and the pipeline busy (and faults
// stay on until one is sent), and the sweeper — run every 2 s meanwhile, through the
// faulty clients — hands it to notify, which closes and sends it under
// the same faults as every send. Versions that reach notify after the
// jump go into the next day's digest; once the stack has drained, the
// clock jumps again and the drain waits for those. The checks count a
// daily reader's version as emailed by the digests that show it: exactly
// once, like every (changelist, recipient, version).

// dailyPrefix starts the addresses of the pool's daily readers.
const dailyPrefix = "digest"

func dailyReader(addr string) bool { return strings.HasPrefix(addr, dailyPrefix) }

// digestClock is the campaign's digest clock: the real time moved on.
type digestClock struct{ off atomic.Int64 }

func (c *digestClock) now() time.Time       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *digestClock) jump(d time.Duration) { c.off.Add(int64(d)) }

// chooseDaily saves every daily reader's preference record.
func chooseDaily(ctx context.Context, rcpts *dynamo.Preferences, specs []spec) (int, error) {
	p := prefs.Default()
	p.Mode, p.DigestHour = prefs.Daily, time.Now().UTC().Hour()
	seen := map[string]bool{}
	for _, sp := range specs {
		for _, r := range sp.Recipients {
			if !dailyReader(r) || seen[r] {
				continue
			}
			seen[r] = true
			if _, err := rcpts.SavePreferences(ctx, unsubscribe.RecipientID(r), p); err != nil {
				return 0, fmt.Errorf("daily reader's preferences: %w", err)
			}
		}
	}
	return len(seen), nil
}

// sweep runs the current workers' sweeper once (their faulty clients).
func (w *workers) sweep(ctx context.Context) {
	w.mu.Lock()
	fns := w.fns
	w.mu.Unlock()
	if fns != nil {
		if _, err := fns.Sweeper.Run(ctx); err != nil {
			w.log.WarnContext(ctx, "chaos: a sweep under faults failed", "error", err)
		}
	}
}

// digestWatch looks, through fault-free clients, at how far the
// campaign's digests have come.
type digestWatch struct {
	clean     *devstack.Clients
	res       devstack.Resources
	ses       string
	run       string
	specs     []spec
	last      time.Time
	sawDigest bool
}

// gathered reports whether a tenth of the daily readers' versions are
// digested (read at most once a second).
func (d *digestWatch) gathered(ctx context.Context) bool {
	if time.Since(d.last) < time.Second {
		return false
	}
	d.last = time.Now()
	var ids []string
	for _, sp := range d.specs {
		for _, r := range sp.Recipients {
			if dailyReader(r) {
				ids = append(ids, delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1))
			}
		}
	}
	rows, err := dynamo.NewDeliveries(d.clean.DynamoDB, d.res.DeliveriesTable, time.Now).GetMany(ctx, ids)
	if err != nil || len(ids) == 0 {
		return len(ids) == 0
	}
	n := 0
	for _, r := range rows {
		if r.Status == delivery.StatusDigested {
			n++
		}
	}
	return n*10 >= len(ids)
}

// sent reports whether SES accepted a digest of the campaign's (read at
// most once a second); true at once without daily readers.
func (d *digestWatch) sent(ctx context.Context, readers int) bool {
	if readers == 0 || d.sawDigest {
		return true
	}
	if time.Since(d.last) < time.Second {
		return false
	}
	d.last = time.Now()
	emails, err := (&devstack.SESEmulator{BaseURL: d.ses}).Emails(ctx)
	if err != nil {
		return false
	}
	for _, e := range emails {
		if strings.HasPrefix(e.Header(mail.DeliveryIDHeader), "g_") && strings.Contains(strings.Join(e.Destination.To, ","), d.run) {
			d.sawDigest = true
		}
	}
	return d.sawDigest
}

// digestsDueMidway moves the digest clock a day on once ready is true
// (checked every 200 ms), then runs the sweeper every 2 s, until the
// returned func is called; which also moves the clock if ready never
// was. jumped is told when the clock moves.
func (w *workers) digestsDueMidway(ctx context.Context, clk *digestClock, ready func() bool, jumped func()) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var moved atomic.Bool
	jump := func() {
		if moved.CompareAndSwap(false, true) {
			clk.jump(24*time.Hour + time.Minute)
			jumped()
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		last := time.Time{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !moved.Load() && ready() {
					jump()
				}
				if moved.Load() && time.Since(last) >= 2*time.Second {
					last = time.Now()
					w.sweep(ctx)
				}
			}
		}
	}()
	return func() { cancel(); <-done; jump() }
}

// digestsBusy counts the daily readers' version rows whose digest is not
// settled yet (open, closed and unsent, in flight), or that are not
// gathered into one although their job is done with them.
func (c *checker) digestsBusy(ctx context.Context, specs []spec, accepted map[job.ID]bool) (int, error) {
	rows := dynamo.NewDeliveries(c.clean.DynamoDB, c.res.DeliveriesTable, time.Now)
	n := 0
	seen := map[string]bool{}
	for _, sp := range specs {
		if !accepted[sp.ID] {
			continue
		}
		for _, r := range sp.Recipients {
			if !dailyReader(r) {
				continue
			}
			row, err := rows.Get(ctx, delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1))
			if err != nil || row.Status != delivery.StatusDigested || seen[row.Digest] {
				continue // no row (a dead-lettered job), or its state is the job checks'
			}
			seen[row.Digest] = true
			g, err := rows.Get(ctx, row.Digest)
			if err != nil {
				n++
				continue
			}
			if !g.Status.Done() && g.Status != delivery.StatusFailedPermanent && g.Status != delivery.StatusReconciling {
				n++
			}
		}
	}
	return n, nil
}

// digestCoverage counts, per daily reader's version row, the digest
// emails that show its changelist (each digest email found once, and
// checked to be addressed to its row's reader); it fills the report's
// digest figures.
func (c *checker) digestCoverage(ctx context.Context, rep *Report, specs []spec, emails []devstack.StoredEmail) (map[string]int, error) {
	rows := dynamo.NewDeliveries(c.clean.DynamoDB, c.res.DeliveriesTable, time.Now)
	byDigest := map[string][]devstack.StoredEmail{}
	for _, e := range emails {
		if id := e.Header(mail.DeliveryIDHeader); strings.HasPrefix(id, "g_") {
			byDigest[id] = append(byDigest[id], e)
		}
	}
	covered := map[string]int{}
	counted := map[string]bool{}
	for _, sp := range specs {
		for _, r := range sp.Recipients {
			if !dailyReader(r) {
				continue
			}
			did := delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1)
			row, err := rows.Get(ctx, did)
			if err != nil || row.Digest == "" {
				continue
			}
			section := "== " + sp.Changelist + " version 1 =="
			for _, e := range byDigest[row.Digest] {
				if strings.Contains(e.Body.Text, section) {
					covered[did]++
					rep.DigestEntries++
				}
				if !counted[e.MessageID] {
					counted[e.MessageID] = true
					rep.Digests++
					if !rep.faultsOff.IsZero() && e.At <= rep.faultsOff.Unix() {
						rep.DigestsUnderFaults++
					}
					if !strings.EqualFold(strings.Join(e.Destination.To, ","), r) {
						rep.Misaddressed++
					}
				}
			}
		}
	}
	return covered, nil
}
