package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// Kind is what an action does.
type Kind string

const (
	// Step lets a process make the call it is parked on, with an outcome.
	Step Kind = "step"
	// Deliver receives a message and invokes its queue's function.
	Deliver Kind = "deliver"
	// Publish puts an SES event on the feedback queue (SNS delivery).
	Publish Kind = "publish"
	// Again publishes an event a second time (SNS's at-least-once).
	Again Kind = "again"
	// Tick moves the clock to just past its next deadline.
	Tick Kind = "tick"
	// Sweep runs the sweeper.
	Sweep Kind = "sweep"
	// Kill ends an invocation where it is (a Lambda timeout).
	Kill Kind = "kill"
	// Redrive moves a DLQ's messages back to their queue (new ids).
	Redrive Kind = "redrive"
	// Post sends a webhook to the API: a new intake invocation.
	Post Kind = "post"
	// Overrun (aws.go): a call takes so long that the invocation may
	// start no further message of its batch.
)

// Action is one choice of the explorer. Its Label names it the same way
// in every run that reaches the same state, so a trace replays.
type Action struct {
	Kind Kind
	// Target: the process (Step, Kill), the message (Deliver), the event
	// (Publish, Again), the queue (Redrive), the time (Tick).
	Target string
	Out    Outcome // Step
	// Note says what the step did, for people (not part of the label).
	Note string
}

// Label is the action's stable name.
func (a Action) Label() string {
	switch a.Kind {
	case Step:
		return fmt.Sprintf("step %s %s", a.Target, a.Out)
	case Sweep:
		return "sweep"
	}
	return string(a.Kind) + " " + a.Target
}

// actions lists every choice enabled in the world's state, in a fixed
// order: processes' calls first, then the environment's moves.
func (w *world) actions() []Action {
	var out []Action
	faultsLeft := w.faults < w.sc.MaxFaults
	for _, p := range w.sched.procs {
		if p.at == nil {
			continue
		}
		out = append(out, Action{Kind: Step, Target: p.label, Out: OK})
		if faultsLeft {
			for _, f := range p.at.faults {
				if p.at.name != "ses.Send" || slices.Contains(w.sc.SendFaults, f) {
					out = append(out, Action{Kind: Step, Target: p.label, Out: f})
				}
			}
		}
	}
	running := map[string]int{}
	for _, p := range w.sched.procs {
		running[p.kind]++
	}
	room := len(w.sched.procs) < w.sc.MaxLive
	if room && running["notify"] < w.sc.Notifiers {
		for _, b := range w.batches(w.notifyQ.visible(w.now)) {
			out = append(out, Action{Kind: Deliver, Target: batchLabel(b)})
		}
	}
	for _, q := range []*queue{w.fetchQ, w.llmQ} {
		if room && running[q.name] == 0 {
			for _, b := range w.batches(q.visible(w.now)) {
				out = append(out, Action{Kind: Deliver, Target: batchLabel(b)})
			}
		}
	}
	if room {
		for _, r := range w.postable() {
			out = append(out, Action{Kind: Post, Target: r.label})
		}
	}
	if room && running["feedback"] == 0 {
		for _, b := range w.batches(w.feedback.visible(w.now)) {
			out = append(out, Action{Kind: Deliver, Target: batchLabel(b)})
		}
	}
	for _, e := range w.unpublished() {
		out = append(out, Action{Kind: Publish, Target: e.label()})
	}
	if faultsLeft && w.sc.Duplicates {
		for _, m := range w.mails {
			for _, e := range m.events {
				if e.published == 1 {
					out = append(out, Action{Kind: Again, Target: e.label()})
				}
			}
		}
	}
	if w.ticks < w.sc.MaxTicks && len(w.sched.procs) == 0 {
		if t, ok := w.nextTick(); ok {
			out = append(out, Action{Kind: Tick, Target: "+" + t.Sub(epoch()).String()})
		}
	}
	if room && w.sweeps < w.sc.MaxSweeps && running["sweeper"] < w.sc.Sweepers {
		out = append(out, Action{Kind: Sweep})
	}
	out = append(out, w.overruns()...)
	if faultsLeft && w.sc.Kills {
		for _, p := range w.sched.procs {
			if (w.sc.KillOnly == nil && p.kind != "sweeper") || slices.Contains(w.sc.KillOnly, p.kind) {
				out = append(out, Action{Kind: Kill, Target: p.label})
			}
		}
	}
	if w.redrives < w.sc.MaxRedrives {
		for _, q := range w.queues() {
			if len(q.dlq.visible(w.now)) > 0 {
				out = append(out, Action{Kind: Redrive, Target: q.dlq.name})
			}
		}
	}
	return out
}

// apply performs a; false when a is not enabled here (a trace that does
// not replay).
func (w *world) apply(a Action) (Action, bool) {
	w.steps++
	switch a.Kind {
	case Step:
		p := w.sched.find(a.Target)
		if p == nil || p.at == nil {
			return a, false
		}
		a.Note = p.at.String()
		if a.Out.Fault() {
			w.faults++
		}
		w.sched.step(p, a.Out)
	case Deliver:
		q, ms, ok := w.batchOf(a.Target)
		if !ok {
			return a, false
		}
		notes := make([]string, len(ms))
		for i, m := range ms {
			notes[i] = describe(m)
		}
		a.Note = strings.Join(notes, " + ")
		w.invoke(q, ms...)
	case Overrun:
		return w.overrun(a)
	case Publish, Again:
		e := w.event(a.Target)
		if e == nil || (a.Kind == Publish && e.published > 0) {
			return a, false
		}
		if a.Kind == Again {
			w.faults++
		}
		w.publish(e)
	case Tick:
		t, ok := w.nextTick()
		if !ok || "+"+t.Sub(epoch()).String() != a.Target {
			return a, false
		}
		w.ticks++
		w.now = t
	case Sweep:
		w.sweeps++
		w.sweep()
	case Kill:
		p := w.sched.find(a.Target)
		if p == nil {
			return a, false
		}
		if p.at != nil {
			a.Note = "at " + p.at.String()
		}
		w.faults++
		w.sched.kill(p)
	case Post:
		r := w.request(a.Target)
		if r == nil || r.answered || (r.proc != nil && w.live(r.proc)) || r.attempts >= maxAttempts {
			return a, false
		}
		a.Note = fmt.Sprintf("key %s, attempt %d", r.key, r.attempts+1)
		w.post(r)
	case Redrive:
		for _, q := range w.queues() {
			if q.dlq.name == a.Target {
				w.redrives++
				a.Note = fmt.Sprintf("%d messages", q.dlq.redrive(w, q))
				return a, true
			}
		}
		return a, false
	default:
		return a, false
	}
	return a, true
}

func (w *world) message(id string) (*queue, *message) {
	for _, q := range w.queues() {
		if m := q.byID(id); m != nil {
			return q, m
		}
	}
	return nil, nil
}

func (w *world) event(label string) *sesEvent {
	for _, m := range w.mails {
		for _, e := range m.events {
			if e.label() == label {
				return e
			}
		}
	}
	return nil
}

// describe says what a message carries.
func describe(m *message) string {
	if m.event != nil {
		return m.event.label()
	}
	var jm job.Message
	if err := decodeMessage(m.body, &jm); err == nil {
		return string(jm.JobID)
	}
	return "envelope"
}

// nextTick is just past the earliest deadline after now that can change
// what some handler does: a lease ending, a message becoming visible, the
// evidence margin or window passing a send, a job becoming stuck, the
// probe interval. The clock moves only while no invocation runs: its
// jumps are minutes, and an invocation outlives its function timeout
// only as a Kill. It never passes an unpublished Send event's
// publish bound (the world keeps the protocol's assumption), nor moves
// while a slow send's answer is outstanding (a send's timeout is far
// below any of these deadlines).
func (w *world) nextTick() (time.Time, bool) {
	for _, p := range w.sched.procs {
		if p.at != nil && p.at.name == "ses.Answer" {
			return time.Time{}, false
		}
	}
	cfg := w.sc.Config
	var next time.Time
	consider := func(t time.Time) {
		if t.After(w.now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, q := range w.queues() {
		for _, m := range q.msgs {
			if !m.deleted {
				consider(m.visibleAt)
			}
		}
	}
	for _, id := range w.allRows() {
		r, err := w.outbox.Get(context.Background(), id)
		if err != nil {
			continue
		}
		switch r.Status {
		case delivery.StatusOpen:
			consider(r.DueAt) // a digest comes due (digest.go)
		case delivery.StatusSending:
			consider(r.LeaseUntil)
			consider(r.SentBy().Add(cfg.Margin))
			consider(r.SentBy().Add(2 * cfg.Margin))
		case delivery.StatusSent:
			consider(r.NotifiedAt.Add(cfg.Margin))
			consider(r.NotifiedAt.Add(cfg.EvidenceWindow))
		}
	}
	for _, id := range w.jobIDs {
		if j, err := w.jobsMem.Get(context.Background(), id); err == nil && !j.Status.Terminal() {
			consider(j.UpdatedAt.Add(cfg.StuckAfter))
		}
	}
	if next.IsZero() {
		return time.Time{}, false
	}
	next = next.Add(time.Second)
	for _, e := range w.unpublished() {
		if e.typ == "Send" && next.After(e.mail.at.Add(cfg.PublishBound)) {
			return time.Time{}, false
		}
	}
	return next, true
}

func labels(as []Action) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(a.Label())
	}
	return b.String()
}

func decodeMessage(body string, m *job.Message) error { return json.Unmarshal([]byte(body), m) }
