package explore

import (
	"context"
	"fmt"
	"slices"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// Three properties that the healing run cannot see, because the sweeper
// there makes up for them (a lost stage message is re-enqueued ten
// minutes later) or because nothing is lost by them but trust (an ordering
// violation reported when there was none):
//
//   - dropped: a stage message is deleted only when its work is done with
//     — its job has left the stage or has a verdict — or handed on: a
//     fresh copy of it is on the queue (a deferral, a message not
//     started), its envelope is in the stage's DLQ (R-STAGE-9,
//     R-STAGE-10), or another invocation at work on the job will. A Send
//     event's message is deleted only once the event is on its row
//     (R-EVIDENCE-1). Checked as the event source mapping deletes it.
//   - deadline: a message after the first of a batch starts only while
//     its need is left before the reserve (R-STAGE-9): time does not pass
//     while handlers compute here, so one started later would finish in
//     this world but not in Lambda's, which ends the invocation at its
//     timeout and returns the whole batch. Checked as the runner starts
//     each message (aws.go).
//   - reconcile: no row is moved to `reconciling`. These worlds keep the
//     publish bound, so every event that names a sent row reaches the
//     feedback queue in time, and an ordering violation reported here is
//     a false alarm: the sweeper took silence for proof while the path
//     was behind (R-RECON-1).

// checkDelete is called as the ESM deletes m from q: a message whose
// work would be dropped is noted for safety to report.
func (w *world) checkDelete(ctx context.Context, q *queue, m *message) {
	self := procOf(ctx)
	if q == w.feedback {
		w.checkEventKept(m)
		return
	}
	stage, ok := map[*queue]job.Stage{w.notifyQ: job.StageNotify, w.fetchQ: job.StageFetch, w.llmQ: job.StageLLM}[q]
	if !ok {
		return
	}
	id := jobOf(m)
	if id == "" {
		return
	}
	j, err := w.jobsMem.Get(context.Background(), id)
	if err != nil || j.Stage != stage || j.Status.Terminal() {
		return
	}
	for _, o := range q.msgs {
		if o != m && !o.deleted && jobOf(o) == id {
			return // a copy carries it
		}
	}
	for _, o := range q.dlq.msgs {
		if !o.deleted && jobOf(o) == id {
			return // dead-lettered
		}
	}
	for _, p := range w.sched.procs {
		if p != self && p.jobs[id] {
			return // another invocation is at work on the job (a feedback event reopening it enqueues it)
		}
	}
	w.dropped = append(w.dropped, fmt.Sprintf("%s message %s deleted with job %s still %s at %s, no copy, no envelope",
		q.name, m.id, id, j.Status, j.Stage))
}

// checkEventKept: a Send event's message is deleted only once the event
// is on the row it names: its time recorded for the row's message, or the
// message noted as another send of the row (a duplicate) or as one that
// bounced. A Send event dropped unrecorded leaves the row looking unsent
// to a notifier once the evidence path has moved past it.
func (w *world) checkEventKept(m *message) {
	e := m.event
	if e == nil || e.typ != "Send" || e.mail.delivery == "" {
		return
	}
	r, err := w.outbox.Get(context.Background(), e.mail.delivery)
	if err != nil {
		return
	}
	id := e.mail.id
	ours := r.ProviderMessageID == id || r.NotificationID == id
	if (ours && !r.SendEventAt.IsZero()) || slices.Contains(r.DuplicateMessageIDs, id) || slices.Contains(r.BouncedMessageIDs, id) {
		return
	}
	w.dropped = append(w.dropped, fmt.Sprintf("feedback message %s deleted with its Send event of %s not on row %s (%s)", m.id, id, r.ID, r.Status))
}

// jobOf is the job a stage message or a dead-letter envelope names.
func jobOf(m *message) job.ID {
	if sm := m.stageMessage(); sm != nil {
		return sm.JobID
	}
	if env, ok, err := deadletter.Decode([]byte(m.body)); err == nil && ok {
		if env.JobID != "" {
			return job.ID(env.JobID)
		}
		var jm job.Message
		if decodeMessage(env.Original.Body, &jm) == nil {
			return jm.JobID
		}
	}
	return ""
}

// lossSafety checks dropped and reconcile.
func (w *world) lossSafety(o Options) *Violation {
	if len(w.dropped) > 0 && o.checks("dropped") {
		return &Violation{Rule: "dropped", Message: w.dropped[0]}
	}
	if len(w.late) > 0 && o.checks("deadline") {
		return &Violation{Rule: "deadline", Message: w.late[0]}
	}
	if !o.checks("reconcile") {
		return nil
	}
	for _, id := range w.rowIDs {
		r, err := w.outbox.Get(context.Background(), id)
		if err == nil && r.Status == delivery.StatusReconciling {
			return &Violation{Rule: "reconcile", Message: fmt.Sprintf("row %s moved to reconciling (an ordering violation) in a world that keeps the publish bound", id)}
		}
	}
	return nil
}

// jobsOf is the jobs the messages of one invocation name: a stage
// message's job, or the job of the row an SES event names.
func (w *world) jobsOf(ms []*message) map[job.ID]bool {
	out := map[job.ID]bool{}
	for _, m := range ms {
		if id := jobOf(m); id != "" {
			out[id] = true
		}
		if m.event != nil && m.event.mail.delivery != "" {
			if r, err := w.outbox.Get(context.Background(), m.event.mail.delivery); err == nil {
				out[r.JobID] = true
			}
		}
	}
	return out
}
