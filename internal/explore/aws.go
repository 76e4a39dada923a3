package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/wire/feedback"
	wirenotify "github.com/criticizer/criticizer/internal/wire/notify"
)

// What AWS does that a world of one sweeper, unbounded invocations and
// batches of one leaves out (Scenario.Sweepers, Batch, Deadlines,
// Overruns):
//
//   - EventBridge may invoke a scheduled function twice, and a slow sweep
//     overlaps the next: sweeper invocations run side by side.
//   - Lambda's event source mapping hands an invocation up to BatchSize
//     messages; the handler reports the ones it did not finish
//     (ReportBatchItemFailures) and the rest are deleted.
//   - Every invocation has a deadline (the function's timeout). The real
//     runner (internal/stage) starts a message after the first only while
//     its MessageTime is left, and hands the rest back; the real feedback
//     handler does the same with its own budget. A call that takes long
//     (Overrun) moves the clock to where the next message may no longer
//     start, while the invocation goes on.

// timeout is a deployed function's timeout (template.yaml): the deadline
// of each of its invocations in a world with Deadlines.
func timeout(fn string) (time.Duration, bool) {
	switch fn {
	case "notify":
		return 60 * time.Second, true
	case "feedback":
		return 10 * time.Second, true
	}
	return 0, false
}

// Overrun is the explorer's choice that the call a process is parked on
// takes so long that the invocation may start no further message of its
// batch: the clock moves on (for everyone) to that point.
const Overrun Kind = "overrun"

// wireDeployed gives the notify runner and the feedback handler the
// per-message budgets they are deployed with, read from the real code's
// wiring (internal/wire), so that their deadline handling is the one the
// explorer explores.
func (w *world) wireDeployed() {
	clock := func() time.Time { return w.now }
	w.runner.MessageTime = wirenotify.MessageTime
	w.runner.MaxReceives = w.sc.Config.MaxReceives
	w.fb.Budget = deadline.Budget{Need: feedback.RecordNeed, Reserve: feedback.RecordReserve, Now: clock}
	// Watch the runner start each message: one started after its batch's
	// last start (an Overrun) would be cut off by Lambda's timeout.
	stageFunc := w.runner.Func
	w.runner.Func = func(ctx context.Context, m job.Message, attempt int) error {
		if p := procOf(ctx); p != nil {
			if p.started > 0 && !p.noStarts.IsZero() && !w.now.Before(p.noStarts) {
				w.late = append(w.late, fmt.Sprintf("%s started message %d of its batch (job %s) at %s, when none may start any more (from %s): Lambda's timeout would cut it off",
					p.label, p.started+1, m.JobID, stamp(w.now), stamp(p.noStarts)))
			}
			p.started++
		}
		return stageFunc(ctx, m, attempt)
	}
}

// deadlineOf is the deadline of a new invocation of the queue's function
// (zero: none), and the moment after which it may start no further
// message of a batch of n (zero: no such moment to overrun to).
func (w *world) deadlineOf(fn string, n int) (end, noStarts time.Time) {
	t, ok := timeout(fn)
	if !w.sc.Deadlines || !ok {
		return time.Time{}, time.Time{}
	}
	end = w.now.Add(t)
	if n < 2 || !w.sc.Overruns {
		return end, time.Time{}
	}
	b := deadline.Budget{Need: w.runner.MessageTime, Reserve: w.runner.Reserve}
	if fn == "feedback" {
		b = w.fb.Budget
	}
	b.Now = func() time.Time { return w.now }
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	p := b.Plan(ctx)
	return end, end.Add(-p.Reserve() - p.Need() + time.Second)
}

// overruns lists the Overrun actions enabled: a live process of a batch
// with a deadline, parked at a call, before its last start; never past
// the publish bound of an unpublished Send event (the world's one
// assumption), nor while a slow send's answer is outstanding.
func (w *world) overruns() []Action {
	if !w.sc.Overruns || w.faults >= w.sc.MaxFaults {
		return nil
	}
	var out []Action
	for _, p := range w.sched.procs {
		if p.at == nil || p.noStarts.IsZero() || !w.now.Before(p.noStarts) || !w.mayJumpTo(p.noStarts) {
			continue
		}
		out = append(out, Action{Kind: Overrun, Target: p.label})
	}
	return out
}

// mayJumpTo reports whether the clock may move to t while invocations
// run.
func (w *world) mayJumpTo(t time.Time) bool {
	for _, p := range w.sched.procs {
		if p.at != nil && p.at.name == "ses.Answer" {
			return false
		}
	}
	for _, e := range w.unpublished() {
		if e.typ == "Send" && t.After(e.mail.at.Add(w.sc.Config.PublishBound)) {
			return false
		}
	}
	return true
}

// overrun applies an Overrun.
func (w *world) overrun(a Action) (Action, bool) {
	p := w.sched.find(a.Target)
	if p == nil || p.at == nil || p.noStarts.IsZero() || !w.now.Before(p.noStarts) {
		return a, false
	}
	a.Note = p.at.String() + " takes until " + stamp(p.noStarts)
	w.faults++
	w.now = p.noStarts
	return a, true
}

// batches lists the batches a receive may hand one invocation from the
// visible messages vis: every set of one to Batch of them, each in send
// order (the order of a batch's records is SQS's; send order stands for
// it).
func (w *world) batches(vis []*message) [][]*message {
	n := max(w.sc.Batch, 1)
	var out [][]*message
	var pick func(from int, cur []*message)
	pick = func(from int, cur []*message) {
		if len(cur) > 0 {
			out = append(out, slices.Clone(cur))
		}
		if len(cur) == n {
			return
		}
		for i := from; i < len(vis); i++ {
			pick(i+1, append(cur, vis[i]))
		}
	}
	pick(0, nil)
	return out
}

// batchLabel names a batch: its messages' ids joined by "+".
func batchLabel(ms []*message) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	return strings.Join(ids, "+")
}

// batchOf resolves a Deliver action's target to its queue and messages,
// every one visible now; ok is false otherwise.
func (w *world) batchOf(target string) (*queue, []*message, bool) {
	var q *queue
	var ms []*message
	for _, id := range strings.Split(target, "+") {
		mq, m := w.message(id)
		if m == nil || m.visibleAt.After(w.now) || (q != nil && mq != q) {
			return nil, nil, false
		}
		q = mq
		ms = append(ms, m)
	}
	return q, ms, q != nil
}
