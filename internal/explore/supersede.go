package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// newer-rejected is R-QUIET-4's world: version 2 was mailed first (its
// notify ran before the world starts, newerSentFirst), SES accepted it,
// and will publish its Send event and then a Reject (its content
// refused): the recipient never had it. Version 1's notify — judging
// version 2 before the Reject is recorded, after, or between its read of
// version 2's row and its write (the race the transaction of
// store.SettleQuiet closes), two notifiers at once when its row is
// revived while its first run is under way — must end with version 1
// mailed, once, whether it was superseded by version 2 and revived when
// the Reject came or saw version 2 undone first; and no quiet row may
// stand on version 2 (quietStandsOnReached, owed). How version 1 waits
// while version 2 is on its way is newer-refused's.
//
// supersedeScenarios are the worlds of R-QUIET-3's rule that a version is
// superseded only by one that reached the recipient: versions 1 and 2 of
// one change, both accepted before anything runs, the quiet rules on, and
// version 2 ending without mailing the recipient — its mail refused for
// good by SES (a Refused send), its model run refused by its budget (the
// real llm stage), or its notify message dead-lettered on its last
// receive with the recipient's row never sent (newer-dead-lettered) —
// before, during or after version 1's notify judges it, in every order.
// Each recipient must then be mailed exactly one version, the newest that
// could reach them (OneVersion), no row may be superseded by a version
// that never reached its recipient, and no job may wait for ever
// (liveness: version 1 waiting on a version 2 that cannot come stays at
// notify, in progress).
//
// In newer-refused the two versions' notifiers run at once (Lambda
// polls one queue with several invocations): version 1 may judge version
// 2 while version 2's row is claimed and its send in flight, the one
// moment its row is `sending` in a world with no lost answer. With one
// notifier, version 2's run always ended before version 1's began, and a
// judge that took a send in flight for one that reached the recipient
// went unseen (mutation quiet-sending-successor-reached).
func supersedeScenarios() []Scenario {
	return []Scenario{
		{Name: "newer-refused", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}}},
			Quiet: true, OneVersion: true, Notifiers: 2, MaxFaults: 1, SendFaults: []Outcome{Refused}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 20, DeepDepth: 30},
		{Name: "newer-over-budget", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}, OverBudget: true}},
			Quiet: true, OneVersion: true, MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 18, DeepDepth: 28},
		{Name: "newer-rejected", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}, Fate: RejectedForContent}},
			Start: newerSentFirst, Quiet: true, OneVersion: true, Owed: map[string]int{"cl1 a@example.com": 1},
			Notifiers: 2, MaxFaults: 0, SendFaults: []Outcome{}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 18, DeepDepth: 24},
		// newer-bounced: the same, with a permanent bounce after version
		// 2's Send: the address is suppressed, and version 1 is owed to
		// nobody (the owed check, owed.go: mailing it is wrong).
		{Name: "newer-bounced", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}, Fate: PermanentBounce}},
			Start: newerSentFirst, Quiet: true, OneVersion: true,
			MaxFaults: 0, SendFaults: []Outcome{}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 14, DeepDepth: 22},
		// Version 2's notify message on its last receive (the start), its
		// claim may fail once more: dead-lettered with the row unsent,
		// while version 1's notifier runs beside it.
		{Name: "newer-dead-lettered", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}}},
			Start: newerOnItsLastReceive, Quiet: true, OneVersion: true, Notifiers: 2, MaxFaults: 1, SendFaults: []Outcome{},
			StoreFaults: []string{"outbox.Claim"}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 18, DeepDepth: 26},
	}
}

// newerOnItsLastReceive: version 2's notify message was received twice,
// and each time its notifier created the row and then failed to claim it
// (DynamoDB's 500, through the SDK's retries): the job is
// retryable_failed at notify, its row pending, never sent, and the
// message's next receive is the last its queue allows. The notify runner
// records failures on the job and dead-letters on that last receive, as
// deployed (wire.Runner gives it the jobs table and maxReceiveCount), so
// one more failed claim leaves version 2 dead-lettered with its row
// unsent, before, during or after version 1's look.
func newerOnItsLastReceive(w *world) {
	w.runner.Jobs = failures{jobs{w, w.jobsMem}}
	w.runner.MaxReceives = w.sc.Config.MaxReceives
	for range w.sc.Config.MaxReceives - 1 {
		if _, ok := w.apply(Action{Kind: Deliver, Target: "notify-2"}); !ok {
			panic("explore: start: notify-2 is not visible")
		}
		p := w.sched.procs[len(w.sched.procs)-1]
		w.runTo(p.label, "outbox.Claim")
		w.sched.step(p, FailBefore)
		w.runOut(p.label)
	}
}

// newerSentFirst: version 2's notify message is delivered first and its
// run ends: its row sent, SES holding its mail and the mail's events
// (Send, then the Reject of newer-rejected) unpublished, version 1's
// notify message on the queue.
func newerSentFirst(w *world) {
	if _, ok := w.apply(Action{Kind: Deliver, Target: "notify-2"}); !ok {
		panic("explore: start: notify-2 is not visible")
	}
	w.runOut(w.sched.procs[len(w.sched.procs)-1].label)
}

// supersedeDeepDepths are make explore's bounds of supersedeScenarios,
// those docs/chaos.md's figures were measured at.
func supersedeDeepDepths() map[string]int {
	return map[string]int{"newer-refused": 30, "newer-over-budget": 28, "newer-dead-lettered": 26, "newer-rejected": 24, "newer-bounced": 22}
}

// supersedeBeforeReached is R-QUIET-3 as it was: a newer version counts
// as reaching every recipient unless its job has visibly failed
// (dead-lettered, refused by a budget, nobody to read it, skipped by its
// repository's settings) — so an older version was superseded by a newer
// one still on its way, and when that one then failed, nobody was mailed.
func supersedeBeforeReached(w *world) {
	if w.quiet == nil {
		return
	}
	settleAsItWas(w)
	w.quiet.SetJudge(func(newer job.Job, _ delivery.Row, _ bool) delivery.Successor {
		switch {
		case newer.Status == job.StatusDeadLettered, newer.Status == job.StatusBudgetExceeded,
			newer.Status == job.StatusNoRecipients, newer.Skipped != "":
			return delivery.Unreachable
		}
		return delivery.Reached
	})
}

// sendingCountsAsReached is the judge with mutation
// quiet-sending-successor-reached: a newer version whose row is claimed,
// its send in flight, counts as having reached the recipient — and when
// SES then refuses that send for good, the older version was superseded
// by a version nobody received.
func sendingCountsAsReached(w *world) {
	if w.quiet == nil {
		return
	}
	settleAsItWas(w)
	w.quiet.SetJudge(func(newer job.Job, r delivery.Row, ok bool) delivery.Successor {
		if ok && r.Status == delivery.StatusSending {
			return delivery.Reached
		}
		return delivery.Judge(newer, r, ok)
	})
}

// undoneCountsAsReached is the judge as it was before R-QUIET-4: a newer
// version whose row was sent counts as having reached the recipient
// (delivery.Row.HasContent then), whatever SES said after the Send — a
// Reject, a bounce — with quiet settlements that stand on nothing
// (settleAsItWas). The older version judged after the Reject is
// superseded by the rejected one, and nobody is mailed.
func undoneCountsAsReached(w *world) {
	if w.quiet == nil {
		return
	}
	settleAsItWas(w)
	w.quiet.SetJudge(func(newer job.Job, r delivery.Row, ok bool) delivery.Successor {
		if ok && (!r.NotifiedAt.IsZero() || r.NotificationID != "") {
			return delivery.Reached
		}
		return delivery.Judge(newer, r, ok)
	})
}

// settleAsItWas puts back the quiet settlement the judges above were
// written against: the row settled alone, as store Skip settles it,
// standing on nothing (no Row.StandsOn, no condition on the row it rests
// on). With today's settlement (store SettleQuiet) a judge that counts a
// version as reached too early meets the store's refusal instead, and
// the older version is decided again: the variants would show that
// second guard, not the judge's mistake.
func settleAsItWas(w *world) { w.notify.Deliveries = settledAlone{w.notify.Deliveries} }

// settledAlone is the outbox with quiet settlements as they were before
// R-QUIET-4.
type settledAlone struct{ store.Deliveries }

func (s settledAlone) SettleQuiet(ctx context.Context, id string, status delivery.Status, reason, _ string) (delivery.Row, error) {
	return s.Skip(ctx, id, status, reason)
}

func (s settledAlone) Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error) {
	r.StandsOn = ""
	return s.Deliveries.Ensure(ctx, r)
}

// deadLetteredWaited is the judge with mutation
// quiet-dead-lettered-successor-waits: a dead-lettered newer version
// whose row for the recipient was never sent is waited for as if it could
// still mail them — and the older version waits for ever, its job never
// done, the recipient never mailed.
func deadLetteredWaited(w *world) {
	if w.quiet == nil {
		return
	}
	w.quiet.SetJudge(func(newer job.Job, r delivery.Row, ok bool) delivery.Successor {
		if ok && newer.Status == job.StatusDeadLettered && r.Status.Claimable() {
			return delivery.Undecided
		}
		return delivery.Judge(newer, r, ok)
	})
}

// overBudget starts j at the llm stage, its critique not written yet, with
// its changelist's budget of model runs spent by an earlier run: the real
// llm stage, behind the real batch runner, refuses it (R-BUDGET-1) when
// its message is delivered.
func (w *world) overBudget(j job.Job) {
	j.Stage, j.Critique = job.StageLLM, nil
	w.jobsMem.Put(j)
	mem := memstore.NewBudgets()
	window := store.BudgetWindow{Name: pipeline.BudgetChangelist, Key: job.ChangelistKey(j.Source, j.ChangelistID), Every: time.Hour, Limit: 1}
	if _, err := mem.Spend(context.Background(), store.Spend{JobID: "j_earlier", At: epoch(), Windows: []store.BudgetWindow{window}}); err != nil {
		panic(err)
	}
	log := slog.New(slog.DiscardHandler)
	clock := func() time.Time { return w.now }
	gj := jobs{w, w.jobsMem}
	l := &pipeline.LLM{Base: pipeline.Base{Jobs: gj, Blobs: blobs{w}, Queue: stageQueue{w}, Log: log, Now: clock},
		Critic: critic.NewOffline(), Guard: &pipeline.ModelGuard{Budgets: budgets{w, mem}, PerChangelistHour: 1}}
	w.llm = stage.New(job.StageLLM, "llm", l.Handle, stageQueue{w}, failures{gj}, log)
	w.llm.Policy.Initial = 0
	w.llm.Now = clock
	b, _ := json.Marshal(job.Message{JobID: j.ID, Stage: job.StageLLM})
	w.llmQ.add(w, fmt.Sprintf("llm-%d", j.ReviewVersion), string(b), 0, time.Time{}, nil)
}

// budgets is the in-memory budget store behind gates.
type budgets struct {
	w *world
	s *memstore.Budgets
}

func (b budgets) Spend(ctx context.Context, sp store.Spend) (store.SpendResult, error) {
	return call(b.w, ctx, wr("budgets.Spend", string(sp.JobID)), func() (store.SpendResult, error) { return b.s.Spend(ctx, sp) })
}

// supersedeLiveness checks, once the world is quiet, that every row
// settled superseded names a version that reached its recipient (its row
// sent, or settled because they had its content, or superseded in turn
// by one that did); and, in a OneVersion world, that no recipient was
// mailed two versions of a changelist.
func (w *world) supersedeLiveness() *Violation {
	ctx := context.Background()
	for _, id := range w.rowIDs {
		r, err := w.outbox.Get(ctx, id)
		if err != nil || r.Status != delivery.StatusSuperseded {
			continue
		}
		v, err := strconv.Atoi(strings.TrimPrefix(r.SkipReason, "v"))
		if err != nil {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("row %s is superseded by %q, no version", id, r.SkipReason)}
		}
		by, err := w.outbox.Get(ctx, delivery.ID(r.ChangelistKey, r.Recipient, v))
		if err != nil || !by.Carries(delivery.StatusSuperseded) {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("row %s (v%d) is superseded by v%d, which never reached its recipient (%s)",
				id, r.ReviewVersion, v, by.Status)}
		}
	}
	if v := w.quietStandsOnReached(); v != nil {
		return v
	}
	if v := w.owed(); v != nil {
		return v
	}
	if !w.sc.OneVersion {
		return nil
	}
	versions := map[string]map[int]bool{} // changelist and recipient → versions mailed
	for _, js := range w.sc.Jobs {
		if j, err := w.jobsMem.Get(ctx, job.NewID("generic", js.Changelist, js.Version)); err == nil && w.revived(j) {
			continue // mailed too, if at all (quiet.go)
		}
		for _, rcpt := range js.Recipients {
			id := delivery.ID(job.ChangelistKey("generic", js.Changelist), rcpt, js.Version)
			for _, m := range w.mails {
				if m.delivery == id && m.fate.reaches() {
					k := js.Changelist + " " + rcpt
					if versions[k] == nil {
						versions[k] = map[int]bool{}
					}
					versions[k][js.Version] = true
				}
			}
		}
	}
	for k, vs := range versions {
		if len(vs) > 1 {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("%s was mailed %d versions of a burst accepted at once, want the newest that could reach them", k, len(vs))}
		}
	}
	return nil
}

// quietStandsOnReached checks, once the world is quiet, that every row
// settled quietly rests on a version that reached its recipient in the
// world (R-QUIET-4): the version its reason names — superseded by it, the
// same diff as it, nothing new since it — had a mail SES delivered to
// them, or was itself settled quietly on one that did. It is judged from
// the mail's fate, not from what the rows say (delivery.Row.Reached): a
// Reject or a bounce after the Send undoes a send, whatever the row it
// was recorded on reads.
func (w *world) quietStandsOnReached() *Violation {
	ctx := context.Background()
	for _, id := range w.rowIDs {
		r, err := w.outbox.Get(ctx, id)
		if err != nil || !r.Status.Quiet() {
			continue
		}
		v, ok := namedVersion(r.SkipReason)
		if !ok {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("row %s is %s by %q, no version", id, r.Status, r.SkipReason)}
		}
		if !w.reachedInWorld(delivery.ID(r.ChangelistKey, r.Recipient, v), 0) {
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("row %s (v%d) is %s (%s), but v%d never reached its recipient: SES undid or never sent it",
				id, r.ReviewVersion, r.Status, r.SkipReason, v)}
		}
	}
	return nil
}

// reachedInWorld reports whether row id's recipient has its version: a
// mail of it that reached them, or, for a row settled quietly, the
// version its reason names did in turn; a digested row is its digest's
// (digestLiveness).
func (w *world) reachedInWorld(id string, depth int) bool {
	for _, m := range w.mails {
		if m.delivery == id && m.fate.reaches() {
			return true
		}
	}
	r, err := w.outbox.Get(context.Background(), id)
	switch {
	case err != nil || depth > 10:
		return false
	case r.Status == delivery.StatusDigested:
		return true
	case r.Status.Quiet():
		v, ok := namedVersion(r.SkipReason)
		return ok && w.reachedInWorld(delivery.ID(r.ChangelistKey, r.Recipient, v), depth+1)
	}
	return false
}

// owed checks Scenario.Owed: each recipient named was mailed the
// version they are owed, and it reached them.
func (w *world) owed() *Violation {
	for k, v := range w.sc.Owed {
		cl, rcpt, _ := strings.Cut(k, " ")
		id := delivery.ID(job.ChangelistKey("generic", cl), rcpt, v)
		reached := false
		for _, m := range w.mails {
			reached = reached || (m.delivery == id && m.fate.reaches())
		}
		if !reached {
			r, _ := w.outbox.Get(context.Background(), id)
			return &Violation{Rule: "quiet", Message: fmt.Sprintf("%s is owed v%d, and no mail of it reached them (its row is %s %s) once the world is quiet",
				k, v, r.Status, r.SkipReason)}
		}
	}
	return nil
}

// namedVersion is the version a quiet row's reason names: "v2", "same
// diff as v2", "nothing new since v2 …".
func namedVersion(reason string) (int, bool) {
	m := versionInReason.FindStringSubmatch(reason)
	if m == nil {
		return 0, false
	}
	v, err := strconv.Atoi(m[1])
	return v, err == nil
}

var versionInReason = regexp.MustCompile(`(?:^|\s)v(\d+)\b`)
