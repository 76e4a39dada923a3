package explore

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// Violation is a broken rule, with the path that breaks it.
type Violation struct {
	// Rule is the broken property: "duplicate", "evidence", "verdict",
	// "stuck", "lost".
	Rule    string
	Message string
	Trace   []Action
	// Depth is how many of Trace's actions the explorer chose; the rest
	// are the healing run that followed (no faults, a fair schedule).
	Depth int
}

func (v *Violation) Error() string { return v.Rule + ": " + v.Message }

// safety checks what must hold after every step:
//
//   - duplicate: no recipient has two emails for one (changelist,
//     recipient, version) (R-OUTBOX-10);
//   - evidence: the evidence path never claims to have caught up past a
//     message whose Send event is not yet processed (R-EVIDENCE-2): the
//     notifier would take that send's silence for proof it did not happen;
//   - verdict: a job is made succeeded only when every recipient's row was
//     sent, or settled without a send (R-OUTBOX-8). Checked when the
//     verdict is written. A row sent and then bounced or rejected counts as
//     sent, and a quiet row revived after the send it stood on was undone
//     (R-QUIET-4) as settled: the event changes the row, then the job
//     (reopened, or marked for a person), two writes in that order, and a
//     run that read the row before the event may finalize between them;
//     that the job does not then stay succeeded over such a row is
//     liveness's to check.
func (w *world) safety(o Options) *Violation {
	ctx := context.Background()
	if v := w.intakeSafety(o); v != nil {
		return v
	}
	if v := w.lossSafety(o); v != nil {
		return v
	}
	emails := map[string]int{}
	for _, m := range w.mails {
		if m.delivery != "" && m.fate.reaches() {
			emails[m.delivery]++
		}
	}
	for _, id := range w.allRows() {
		if emails[id] > 1 && o.checks("duplicate") {
			return &Violation{Rule: "duplicate", Message: fmt.Sprintf("%d emails for %s", emails[id], id)}
		}
	}
	if w.sc.Quiet && o.checks("quiet") {
		if v := w.quietSafety(emails); v != nil {
			return v
		}
	}
	if len(w.sc.Daily) > 0 {
		if v := w.digestSafety(o); v != nil {
			return v
		}
	}
	for _, m := range w.mails {
		if send := m.events[0]; o.checks("evidence") && !w.lateSends() && !send.processed && w.caughtUp(m.at) {
			return &Violation{Rule: "evidence", Message: fmt.Sprintf("the evidence path counts as caught up past %s (accepted %s) whose Send event is unprocessed",
				m.id, stamp(m.at))}
		}
	}
	for _, id := range w.jobIDs {
		j, err := w.jobsMem.Get(ctx, id)
		was := w.succeeded[id]
		w.succeeded[id] = err == nil && j.Status == job.StatusSucceeded
		if !w.succeeded[id] || was || !o.checks("verdict") {
			continue
		}
		rows := w.rowsOf(j)
		for _, r := range rows {
			sent := !r.NotifiedAt.IsZero() || r.Status.Done() ||
				(r.Status == delivery.StatusFailedTransient && len(r.BouncedMessageIDs) > 0) || // sent, then bounced
				(r.Status.Claimable() && r.RevivedFrom != "") // settled on a send SES then undid, revived (R-QUIET-4)
			if !sent {
				return &Violation{Rule: "verdict", Message: fmt.Sprintf("job %s made succeeded with row %s %s, never sent", id, r.ID, r.Status)}
			}
		}
		if len(rows) < len(j.AllRecipients()) {
			return &Violation{Rule: "verdict", Message: fmt.Sprintf("job %s made succeeded with %d rows for %d recipients", id, len(rows), len(j.AllRecipients()))}
		}
	}
	return nil
}

// caughtUp is the notifier's own judgement (delivery.Settle) of a send
// made at t with no evidence on its row: would it resend?
func (w *world) caughtUp(t time.Time) bool {
	r := delivery.Row{Status: delivery.StatusSending, LeaseUntil: t}
	return delivery.Settle(r, w.judge()) == delivery.Resend
}

func (w *world) rowsOf(j job.Job) []delivery.Row {
	var rows []delivery.Row
	for _, r := range j.AllRecipients() {
		if row, err := w.outbox.Get(context.Background(), delivery.ID(job.ChangelistKey(j.Source, j.ChangelistID), r, j.ReviewVersion)); err == nil {
			rows = append(rows, row)
		}
	}
	return rows
}

// settle heals the world and checks it: the safety properties after each
// action of the healing run, then liveness. The healing run's actions
// join the trace: a counterexample shows every step.
func (w *world) settle(o Options) ([]Action, *Violation) {
	limit := o.HealLimit
	if limit == 0 {
		limit = 400
	}
	var done []Action
	for a := range w.heal(limit) {
		took, ok := w.apply(a)
		if !ok {
			panic("explore: a healing action did not apply: " + a.Label())
		}
		done = append(done, took)
		if v := w.safety(o); v != nil {
			return done, v
		}
	}
	if o.checks("liveness") {
		if v := w.liveness(); v != nil {
			return done, v
		}
	}
	if w.sc.Evidence.MustSettle && o.checks("settled") {
		if v := w.settled(); v != nil {
			return done, v
		}
	}
	if len(w.sc.Daily) > 0 && o.checks("lost") {
		if v := w.digestLiveness(); v != nil {
			return done, v
		}
	}
	if w.sc.Quiet && o.checks("quiet") {
		if v := w.quietLiveness(); v != nil {
			return done, v
		}
		if v := w.supersedeLiveness(); v != nil {
			return done, v
		}
	}
	if o.checks("owed") {
		return done, w.owedCheck()
	}
	return done, nil
}

// liveness checks, once the world has healed and is quiet, that nothing
// accepted is lost or stuck: every row is sent, delivered or skipped
// without a send, or held for a person with the reason in sight (the
// job needs intervention, or sits dead-lettered with its envelope in the
// DLQ) but never still sending; and every job has a verdict.
func (w *world) liveness() *Violation {
	ctx := context.Background()
	for _, id := range w.jobIDs {
		j, err := w.jobsMem.Get(ctx, id)
		if err != nil && w.staleAnswered(id) {
			continue // a late push, answered stale: no job (R-SOURCE-6)
		}
		if err != nil {
			return &Violation{Rule: "lost", Message: fmt.Sprintf("job %s: %v", id, err)}
		}
		if v := w.intakeLiveness(j); v != nil {
			return v
		}
		// A job refused by its budget (R-BUDGET-1) says so: a verdict.
		visible := j.Status == job.StatusNeedsIntervention || (j.Status == job.StatusDeadLettered && w.envelopeFor(id)) ||
			j.Status == job.StatusBudgetExceeded
		if !visible && j.Status != job.StatusSucceeded {
			return &Violation{Rule: "stuck", Message: fmt.Sprintf("job %s is %s at %s %s", id, j.Status, j.Stage, w.atRest())}
		}
		rows := w.rowsOf(j)
		if len(rows) < len(j.AllRecipients()) && !visible {
			return &Violation{Rule: "lost", Message: fmt.Sprintf("job %s has %d rows for %d recipients", id, len(rows), len(j.AllRecipients()))}
		}
		for _, r := range rows {
			switch {
			case r.Status == delivery.StatusSent, r.Status == delivery.StatusDelivered, r.Status.Done():
			case r.Status == delivery.StatusSending:
				// Held for evidence, even with its job before a person:
				// every event here reaches the feedback queue within the
				// bound, so the evidence settles every send, and a row
				// still sending was left behind (R-STAGE-8's hand-off).
				return &Violation{Rule: "stuck", Message: fmt.Sprintf("row %s is still sending %s, its job %s", r.ID, w.atRest(), j.Status)}
			case visible:
			default:
				return &Violation{Rule: "stuck", Message: fmt.Sprintf("row %s is %s %s, its job %s", r.ID, r.Status, w.atRest(), j.Status)}
			}
		}
	}
	return nil
}

// atRest says when liveness looked: once the world was quiet, or when
// the healing run stopped at its limit with work still going on (a job
// that looks again and again, and never ends).
func (w *world) atRest() string {
	if w.restless {
		return "when the healing run stopped, the world never quiet"
	}
	return "once the world is quiet"
}

// envelopeFor reports whether a stage's DLQ holds a dead-letter
// envelope naming job id.
func (w *world) envelopeFor(id job.ID) bool {
	for _, q := range []*queue{w.notifyQ, w.fetchQ, w.llmQ} {
		for _, m := range q.dlq.msgs {
			env, ok, err := deadletter.Decode([]byte(m.body))
			if !m.deleted && err == nil && ok && env.JobID == string(id) {
				return true
			}
		}
	}
	return false
}

// heal returns, one at a time as they become enabled, the actions of a
// run with no more faults: every process finishes, every event is
// published, every message is delivered in turn, the sweeper runs and the
// clock moves on; the same fair schedule every time. It stops at a quiet
// point that a sweep and a tick do not change, or after limit actions.
// The caller applies each action before asking for the next (heal is an
// iterator).
func (w *world) heal(limit int) func(yield func(Action) bool) {
	return func(yield func(Action) bool) {
		last := ""
		for n := 0; n < limit; n++ {
			var a Action
			switch {
			case len(w.sched.procs) > 0:
				a = Action{Kind: Step, Target: w.sched.procs[0].label, Out: OK}
			case len(w.unpublished()) > 0:
				a = Action{Kind: Publish, Target: w.unpublished()[0].label()}
			case len(w.postable()) > 0:
				a = Action{Kind: Post, Target: w.postable()[0].label}
			case len(w.fetchQ.visible(w.now)) > 0:
				a = Action{Kind: Deliver, Target: w.fetchQ.visible(w.now)[0].id}
			case len(w.llmQ.visible(w.now)) > 0:
				a = Action{Kind: Deliver, Target: w.llmQ.visible(w.now)[0].id}
			case len(w.notifyQ.visible(w.now)) > 0:
				a = Action{Kind: Deliver, Target: w.notifyQ.visible(w.now)[0].id}
			case len(w.feedback.visible(w.now)) > 0:
				a = Action{Kind: Deliver, Target: w.feedback.visible(w.now)[0].id}
			default:
				h := w.canonical(false)
				if h == last {
					return
				}
				last = h
				if !yield(Action{Kind: Sweep}) {
					return
				}
				for len(w.sched.procs) > 0 {
					if !yield(Action{Kind: Step, Target: w.sched.procs[0].label, Out: OK}) {
						return
					}
				}
				t, ok := w.nextTick()
				if !ok {
					continue
				}
				a = Action{Kind: Tick, Target: "+" + t.Sub(epoch()).String()}
			}
			if !yield(a) {
				return
			}
		}
		w.restless = true
	}
}

// hash is the state's fingerprint: two runs with the same fingerprint
// behave the same from here on, so the explorer visits each once.
func (w *world) hash() uint64 {
	h := fnv.New64a()
	h.Write([]byte(w.canonical(true)))
	return h.Sum64()
}

// canonical writes the whole state: the clock, every job and row, the
// evidence path, suppressions, the queues, the mail SES accepted, and
// each live process's history; with budgets when they still constrain
// the choices (the explorer's hash), without when healing.
func (w *world) canonical(budgets bool) string {
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "now=%s\n", w.now.Sub(epoch()))
	if budgets {
		fmt.Fprintf(&b, "spent=%d/%d/%d/%d\n", w.faults, w.ticks, w.sweeps, w.redrives)
	}
	for _, id := range w.jobIDs {
		j, _ := w.jobsMem.Get(ctx, id)
		fmt.Fprintf(&b, "job %s %s/%s a=%v rev=%d up=%s\n", id, j.Stage, j.Status, j.Attempts, j.AddedRev, stamp(j.UpdatedAt))
	}
	for _, id := range w.allRows() {
		r, err := w.outbox.Get(ctx, id)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "row %s %s n=%s s=%s d=%s b=%s c=%s r=%s err=%s chk=%s dup=%v bounced=%v att=%d dg=%s e=%v\n", id, rowDigest(r), stamp(r.NotifiedAt),
			stamp(r.SendEventAt), stamp(r.DeliveredAt), stamp(r.BouncedAt), stamp(r.ComplainedAt), stamp(r.RejectedAt),
			r.LastErrorClass, stamp(r.EvidenceCheckedAt), r.DuplicateMessageIDs, r.BouncedMessageIDs, r.Attempts, r.Digest, r.Entries)
	}
	st, _ := w.evidence.State(ctx, w.sc.ConfigurationSet)
	fmt.Fprintf(&b, "evidence newest=%s drained=%s probe=%s\n", stamp(st.Newest), stamp(st.Drained), stamp(st.ProbeSentAt))
	var rcpts []string
	for _, js := range w.sc.Jobs {
		rcpts = append(rcpts, js.Recipients...)
	}
	slices.Sort(rcpts)
	stand, _ := w.rcpts.Standings(ctx, slices.Compact(rcpts))
	fmt.Fprintf(&b, "standings %v\n", stand)
	var msgs []string
	for _, q := range []*queue{w.notifyQ, w.notifyQ.dlq, w.fetchQ, w.fetchQ.dlq, w.llmQ, w.llmQ.dlq, w.feedback, w.feedback.dlq} {
		for _, m := range q.msgs {
			if !m.deleted {
				msgs = append(msgs, fmt.Sprintf("msg %s %s %s vis=%s rc=%d\n", q.name, m.id, describe(m), stamp(m.visibleAt), m.receives))
			}
		}
	}
	sort.Strings(msgs)
	b.WriteString(strings.Join(msgs, ""))
	var mails []string
	for _, m := range w.mails {
		line := fmt.Sprintf("mail %s %s %s %s", m.id, m.delivery, m.fate, stamp(m.at))
		for _, e := range m.events {
			line += fmt.Sprintf(" %s:%d:%t", e.typ, e.published, e.processed)
		}
		mails = append(mails, line+"\n")
	}
	sort.Strings(mails)
	b.WriteString(strings.Join(mails, ""))
	w.intakeState(&b)
	for _, p := range w.sched.procs {
		at := "-"
		if p.at != nil {
			at = p.at.String()
		}
		fmt.Fprintf(&b, "proc %s at=%s dl=%s hist=%s\n", p.label, at, stamp(p.deadline), strings.Join(p.hist, "|"))
	}
	return b.String()
}
