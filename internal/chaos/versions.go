package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/owed"
)

// versioned is one change of the campaign's versions part: two versions
// of one changelist, each its own webhook, pushed in a seeded order — in
// order, the later one first (the earlier one comes late and is stale,
// R-SOURCE-6), or both at once — and, for some, SES rejecting or
// bouncing for good the later version's mail to its second reader after
// the Send (R-QUIET-4). Its readers are its own (a bounce suppresses the
// address), none daily. What each reader is owed is the owed oracle's
// (internal/owed, R-OWED-1), checked once the stack is quiet.
type versioned struct {
	Changelist string
	Recipients []string
	Order      string // "in-order", "late", "at-once"
	Fate       owed.Verdict
	bodies     [2][]byte
	// sent and answered are when each version's webhook was first sent
	// and first answered below 500; status is that answer.
	sent, answered [2]time.Time
	status         [2]int
}

// versionOrders are the ways two pushes reach intake.
var versionOrders = []string{"in-order", "late", "at-once"}

// generateVersions builds n versioned changes.
func generateVersions(rng *rand.Rand, run string, n int, plantedToken string) []*versioned {
	out := make([]*versioned, n)
	for i := range out {
		cl := fmt.Sprintf("%s-pv%03d", run, i)
		v := &versioned{Changelist: cl, Order: versionOrders[i%len(versionOrders)],
			Recipients: []string{fmt.Sprintf("pv%03da.%s@example.com", i, run), fmt.Sprintf("pv%03db.%s@example.com", i, run)}}
		switch rng.IntN(3) {
		case 1:
			v.Fate = owed.Rejected
		case 2:
			v.Fate = owed.Bounced
		}
		for k := range 2 {
			diff := fmt.Sprintf(diffTemplate, plantedToken, 5000+i)
			if k == 1 {
				// Version 2 adds a line the critic flags: something new
				// for its readers (R-QUIET-2), so it is mailed.
				diff = strings.Replace(strings.Replace(diff, "@@ -3,4 +3,8 @@", "@@ -3,4 +3,9 @@", 1),
					"+\n+func", fmt.Sprintf("+// TODO: version two of change %d\n+\n+func", i), 1)
			}
			v.bodies[k], _ = json.Marshal(map[string]any{"changelist_id": cl, "review_version": k + 1,
				"title": fmt.Sprintf("Chaos versions %d", i), "url": "https://review.example.com/c/" + cl,
				"author": "chaos", "recipients": v.Recipients, "diff": diff})
		}
		out[i] = v
	}
	return out
}

func (v *versioned) key(k int) string { return fmt.Sprintf("chaos-%s-v%d", v.Changelist, k+1) }

func (v *versioned) id(k int) job.ID { return job.NewID("generic", v.Changelist, k+1) }

// postVersions posts every change's two webhooks in its order, the
// changes concurrently; each is retried until answered below 500. It
// adds the versions accepted to accepted (for the drain).
func postVersions(ctx context.Context, s *sender, vs []*versioned, accepted map[job.ID]bool) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	post := func(v *versioned, k int) {
		v.sent[k] = time.Now()
		st := s.deliverAny(ctx, v.key(k), v.bodies[k])
		mu.Lock()
		v.answered[k], v.status[k] = time.Now(), st
		if st == http.StatusAccepted || st == http.StatusOK {
			accepted[v.id(k)] = true
		}
		mu.Unlock()
	}
	for _, v := range vs {
		wg.Go(func() {
			switch v.Order {
			case "in-order":
				post(v, 0)
				post(v, 1)
			case "late":
				post(v, 1)
				post(v, 0)
			default:
				var both sync.WaitGroup
				both.Go(func() { post(v, 0) })
				both.Go(func() { post(v, 1) })
				both.Wait()
			}
		})
	}
	wg.Wait()
}

// deliverAny posts one delivery until it is answered below 500, and
// returns that answer's status (0 when it never was): a stale version's
// 409 is an answer here.
func (s *sender) deliverAny(ctx context.Context, key string, body []byte) int {
	backoff := 50 * time.Millisecond
	for attempt := 1; attempt <= s.maxAttempts && ctx.Err() == nil; attempt++ {
		status, _, _, err := s.post(ctx, key, body)
		if err == nil && status < 500 {
			return status
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
	return 0
}

// versionVerdicts is SES's part in the versions world: the Delivery
// event of each change's version-2 mail to its second reader becomes a
// Reject or a permanent Bounce, after the Send. Those messages' events
// skip the evidence faults (a lost Reject is the window no design
// closes, docs/architecture.md); every other event goes on to next.
type versionVerdicts struct {
	fate map[string]owed.Verdict // delivery id → verdict
	next func(context.Context, []devstack.SESEvent, func(context.Context, devstack.SESEvent) error) error
}

func newVersionVerdicts(vs []*versioned, next func(context.Context, []devstack.SESEvent, func(context.Context, devstack.SESEvent) error) error) *versionVerdicts {
	f := &versionVerdicts{fate: map[string]owed.Verdict{}, next: next}
	for _, v := range vs {
		if v.Fate != owed.Delivered {
			f.fate[delivery.ID(job.ChangelistKey("generic", v.Changelist), v.Recipients[1], 2)] = v.Fate
		}
	}
	return f
}

func (f *versionVerdicts) deliver(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
	var rest []devstack.SESEvent
	for _, e := range evs {
		v, ok := f.fate[e.DeliveryID]
		if !ok {
			rest = append(rest, e)
			continue
		}
		if e.Type == "Delivery" {
			e.Type = "Reject"
			if v == owed.Bounced {
				e.Type, e.BounceType = "Bounce", "Permanent"
			}
		}
		if err := publish(ctx, e); err != nil {
			return err
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return f.next(ctx, rest, publish)
}

// owedWorld is the versions part as the oracle reads it: each change's
// two versions in the code host's order (the generic source's: the
// version numbers), when each webhook was sent and answered (in
// milliseconds since the first), SES's verdicts; and what reached each
// reader: every stored email of a version, but the ones SES rejected or
// bounced.
//
// ended names the versions whose job ended without mailing (dead-lettered,
// held for a person): a reader their mail did not reach could not be
// reached by them, as SES refusing the send would say.
func owedWorld(vs []*versioned, emails []devstack.StoredEmail, ended map[job.ID]bool) (owed.World, []owed.Mail) {
	var t0 time.Time
	for _, v := range vs {
		for _, t := range v.sent {
			if t0.IsZero() || t.Before(t0) {
				t0 = t
			}
		}
	}
	ms := func(t time.Time) int { return int(t.Sub(t0) / time.Millisecond) }
	w := owed.World{Verdicts: map[owed.Mail]owed.Verdict{}}
	mails := map[string]owed.Mail{}
	for _, v := range vs {
		c := owed.Change{ID: v.Changelist, Author: "chaos"}
		for k := range 2 {
			h := owed.Head{Name: fmt.Sprintf("v%d", k+1), Readers: v.Recipients, Diff: fmt.Sprintf("%s-%d", v.Changelist, k+1),
				Arrived: ms(v.sent[k]), Took: ms(v.answered[k]) - ms(v.sent[k]), LostRace: v.status[k] == http.StatusConflict}
			if v.status[k] == 0 {
				h.Failed = true // never answered: nothing is owed of it
			}
			c.Heads = append(c.Heads, h)
			for _, r := range v.Recipients {
				mails[delivery.ID(job.ChangelistKey("generic", v.Changelist), r, k+1)] = owed.Mail{Change: v.Changelist, Head: h.Name, Reader: r}
			}
		}
		if v.Fate != owed.Delivered {
			w.Verdicts[owed.Mail{Change: v.Changelist, Head: "v2", Reader: v.Recipients[1]}] = v.Fate
		}
		w.Changes = append(w.Changes, c)
	}
	var got []owed.Mail
	reached := map[owed.Mail]bool{}
	for _, e := range emails {
		m, ok := mails[e.Header(mail.DeliveryIDHeader)]
		if !ok || w.Verdicts[m] == owed.Rejected || w.Verdicts[m] == owed.Bounced {
			continue
		}
		got = append(got, m)
		reached[m] = true
	}
	for _, v := range vs {
		for k := range 2 {
			if !ended[v.id(k)] {
				continue
			}
			for _, r := range v.Recipients {
				m := owed.Mail{Change: v.Changelist, Head: fmt.Sprintf("v%d", k+1), Reader: r}
				if _, set := w.Verdicts[m]; !set && !reached[m] {
					w.Verdicts[m] = owed.Refused
				}
			}
		}
	}
	return w, got
}

// verifyVersions checks the versions part against the owed oracle: 0
// lost, 0 wrong.
func verifyVersions(vs []*versioned, hp host, emails []devstack.StoredEmail, ended map[job.ID]bool, rep *Report) {
	if len(vs) == 0 && len(hp.pulls) == 0 && hp.gerrit == nil {
		return
	}
	for _, e := range ended {
		if e {
			rep.VersionsEnded++
		}
	}
	w, got := owedWorld(vs, emails, ended)
	hostGot, problems := hostWorld(&w, hp.repo, hp.pulls, hp.t0(), emails, ended)
	got = append(got, hostGot...)
	gerritGot := hp.gerrit.world(&w, emails, ended)
	got = append(got, gerritGot...)
	if hp.gerrit != nil {
		rep.GerritStacked, rep.GerritMailed = 1, len(gerritGot)
	}
	rep.Problems = append(rep.Problems, problems...)
	rep.HostPulls = len(hp.pulls)
	for _, p := range hp.pulls {
		rep.HostHeads += len(p.Heads)
		for _, h := range p.Heads {
			if h.stale {
				rep.HostStale++
			}
		}
	}
	a := owed.Compute(w)
	f := owed.Check(w, a, got, nil)
	rep.VersionChanges = len(vs)
	for _, v := range vs {
		for k := range 2 {
			if v.status[k] == http.StatusConflict {
				rep.VersionsStale++
			}
		}
		if v.Fate != owed.Delivered {
			rep.VersionsUndone++
		}
	}
	for _, d := range a.Dues {
		rep.VersionsOwed += len(d.Heads)
	}
	rep.VersionsMailed = len(got)
	rep.OwedLost, rep.OwedWrong = len(f.Lost), len(f.Wrong)
	for _, l := range f.Lost {
		rep.Problems = append(rep.Problems, "owed and not delivered: "+l)
	}
	for _, x := range f.Wrong {
		rep.Problems = append(rep.Problems, "delivered and not owed: "+x)
	}
}

// endedVersions reads each version's job: ended without mailing
// (dead-lettered, needing a person, refused by a budget).
// more are other jobs to read (the code host's part's).
func endedVersions(ctx context.Context, get func(context.Context, job.ID) (job.Job, error), vs []*versioned, more []job.ID) (map[job.ID]bool, error) {
	out := map[job.ID]bool{}
	ids := slices.Clone(more)
	for _, v := range vs {
		for k := range 2 {
			ids = append(ids, v.id(k))
		}
	}
	for _, id := range ids {
		j, err := get(ctx, id)
		if err != nil {
			continue // never created: stale, or never answered
		}
		switch j.Status {
		case job.StatusDeadLettered, job.StatusNeedsIntervention, job.StatusBudgetExceeded:
			out[id] = true
		}
	}
	return out, nil
}
