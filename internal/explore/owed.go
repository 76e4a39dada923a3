package explore

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/owed"
)

// owedWorld is the world's inputs as the owed oracle reads them
// (internal/owed, R-OWED-1): each changelist's versions in the code
// host's order (the version numbers: the generic source's order), when
// each arrived (an intake scenario's webhooks: the step its first
// attempt was sent, and answered; otherwise all at once before anything
// ran), and SES's verdict on each mail — the fate of the mail SES
// accepted, a send SES refused for good, or, for a version whose job
// ended before a mail of it to the reader was accepted (refused by a
// budget, dead-lettered, held for a person), that it could not reach
// them. Only the world's own record of what happened is read (the mails
// SES took, the sends it refused, the jobs' verdicts), never the delivery
// rows: the oracle must not share the notifier's mistakes.
func (w *world) owedWorld() (owed.World, []owed.Mail) {
	ctx := context.Background()
	ow := owed.World{Verdicts: map[owed.Mail]owed.Verdict{}}
	mails := map[string]owed.Mail{} // delivery id → its mail
	byCL := map[string]*owed.Change{}
	var order []string
	for _, js := range w.sc.Jobs {
		c := byCL[js.Changelist]
		if c == nil {
			c = &owed.Change{ID: js.Changelist, Author: "ana", Burst: w.sc.OneVersion, Explicit: !w.sc.Quiet}
			byCL[js.Changelist] = c
			order = append(order, js.Changelist)
		}
		h := owed.Head{Name: fmt.Sprintf("v%d", js.Version), Readers: js.Recipients, Diff: "diff-" + js.Changelist}
		if len(js.Posts) > 0 {
			h.Arrived, h.Took = w.arrival(js)
			h.LostRace = w.staleAnswered(job.NewID("generic", js.Changelist, js.Version))
		}
		j, err := w.jobsMem.Get(ctx, job.NewID("generic", js.Changelist, js.Version))
		if err == nil && w.revived(j) {
			// Dead-lettered and run again (quiet.go): a version that came
			// back after an older one was mailed in its stead; the
			// change's versions no longer arrived at once.
			c.Burst = false
		}
		ended := err == nil && (j.Status == job.StatusDeadLettered || j.Status == job.StatusBudgetExceeded || j.Status == job.StatusNeedsIntervention)
		for _, r := range js.Recipients {
			id := delivery.ID(job.ChangelistKey("generic", js.Changelist), r, js.Version)
			m := owed.Mail{Change: js.Changelist, Head: h.Name, Reader: r}
			mails[id] = m
			if v, ok := w.verdictOf(id); ok {
				ow.Verdicts[m] = v
			} else if ended {
				ow.Verdicts[m] = owed.Refused
			}
		}
		c.Heads = append(c.Heads, h)
	}
	for _, cl := range order {
		c := byCL[cl]
		// The generic source's order is its version numbers'.
		sortHeads(c.Heads)
		ow.Changes = append(ow.Changes, *c)
	}
	var delivered []owed.Mail
	for _, m := range w.mails {
		if om, ok := mails[m.delivery]; ok && m.fate.reaches() {
			delivered = append(delivered, om)
		}
	}
	return ow, delivered
}

// verdictOf is SES's verdict on delivery id's mail, when SES took or
// refused one: a mail that reached the reader is Delivered, whatever
// became of another copy.
func (w *world) verdictOf(id string) (owed.Verdict, bool) {
	v, seen := owed.Verdict(""), false
	for _, m := range w.mails {
		if m.delivery != id {
			continue
		}
		switch m.fate {
		case Delivered:
			return owed.Delivered, true
		case Complained:
			return owed.Complained, true
		case PermanentBounce:
			v, seen = owed.Bounced, true
		case RejectedForContent, TransientBounce:
			if v != owed.Bounced {
				v, seen = owed.Rejected, true
			}
		}
	}
	if !seen && w.refused[id] {
		return owed.Refused, true
	}
	return v, seen
}

// arrival is when js's webhook arrived: the step its first delivery was
// first sent, and how many steps later one of its deliveries was first
// answered with something other than a 5xx (or, never answered, the
// steps so far).
func (w *world) arrival(js JobSpec) (at, took int) {
	at, answered := -1, -1
	for _, r := range w.requests {
		if !slices.Contains(js.Posts, r.key) || r.attempts == 0 {
			continue
		}
		if at < 0 || r.sentAt < at {
			at = r.sentAt
		}
		if r.answered && (answered < 0 || r.answeredAt < answered) {
			answered = r.answeredAt
		}
	}
	if at < 0 {
		return w.steps, 0
	}
	if answered < 0 {
		answered = w.steps
	}
	return at, answered - at
}

// sortHeads orders heads by their version ("v1" < "v2" < "v10").
func sortHeads(hs []owed.Head) {
	num := func(h owed.Head) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(h.Name, "v"))
		return n
	}
	slices.SortStableFunc(hs, func(a, b owed.Head) int { return cmp.Compare(num(a), num(b)) })
}

// owedCheck is the owed property, once the world is quiet: every reader
// has the content they are owed (else "lost"), and no mail reached a
// reader that they were never to get (else "wrong"). Digest worlds are
// digestLiveness's: what a digest covers is not one version's mail.
func (w *world) owedCheck() *Violation {
	if len(w.sc.Daily) > 0 {
		return nil
	}
	ow, delivered := w.owedWorld()
	f := owed.Check(ow, owed.Compute(ow), delivered, nil)
	switch {
	case len(f.Lost) > 0:
		return &Violation{Rule: "owed", Message: "lost: " + strings.Join(f.Lost, "; ") + " " + w.atRest()}
	case len(f.Wrong) > 0:
		return &Violation{Rule: "owed", Message: "wrong: " + strings.Join(f.Wrong, "; ")}
	}
	return nil
}

// staleAnswered reports whether job id was never created because every
// webhook of it was answered as stale (409, or 200 "stale"): a late push
// the code host places behind a versioned head (R-SOURCE-6).
func (w *world) staleAnswered(id job.ID) bool {
	for _, js := range w.sc.Jobs {
		if job.NewID("generic", js.Changelist, js.Version) != id || len(js.Posts) == 0 {
			continue
		}
		answered := false
		for _, r := range w.requests {
			if !slices.Contains(js.Posts, r.key) {
				continue
			}
			for _, a := range r.answers {
				if a.status >= 500 {
					continue
				}
				if a.status != http.StatusConflict && !strings.Contains(a.body, `"stale"`) {
					return false
				}
				answered = true
			}
		}
		return answered
	}
	return false
}
