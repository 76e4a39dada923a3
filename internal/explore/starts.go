package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// The worlds of what AWS can do (aws.go): two sweepers overlapping, two
// notifiers and a sweeper at once, deadlines and batches. Each is small,
// and some start where a longer history leaves the protocol (Start), so
// that the bounds reach the race itself.

// awsScenarios are the scenarios of aws.go's choices, part of Scenarios.
func awsScenarios() []Scenario {
	one := []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}}}
	return []Scenario{
		// A notifier died between its claim and its send (a Lambda
		// timeout); the evidence path has since caught up past the claim.
		// The job's notify message comes back, and a second copy with it
		// (the sweeper's, a deferral's): two notifiers settle the row at
		// once, the sweeper beside them. One releases the row and claims
		// it; the other's release must not land on that live claim.
		{Name: "requeue-race", Jobs: []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}, Messages: 2}},
			Start: abandonedClaim, Notifiers: 2, MaxLive: 3, MaxFaults: 0, MaxTicks: 1, MaxSweeps: 1, MaxDepth: 18, DeepDepth: 26},
		// The same dead claim, its notify message gone (its receives
		// ran out: the redrive policy moved it to the DLQ) and its job
		// before a person (held): only the sweeper's pick of the row
		// stuck in sending finds it. Two sweeps overlap (EventBridge's
		// twice-invoked schedule), each hands the job to notify, two
		// notifiers settle the row at once; an answer may be lost.
		{Name: "overlapping-sweeps", Jobs: one, Start: abandonedClaimHeld, Sweepers: 2, MaxSweeps: 2, Notifiers: 2, MaxLive: 3,
			MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 1, MaxDepth: 26, DeepDepth: 32},
		// A job waiting at notify whose message is gone: two sweeps
		// overlap past the stuck threshold, each enqueues it again, two
		// notifiers mail it at once.
		{Name: "lost-message-sweeps", Jobs: one, Start: lostNotifyMessage, Sweepers: 2, MaxSweeps: 2, Notifiers: 2, MaxLive: 3,
			MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 1, MaxDepth: 22, DeepDepth: 28},
		// Three notify messages for two reviews, received in batches of up
		// to three; every invocation has its deployed deadline, and a call
		// may take so long that the rest of its batch is handed back.
		{Name: "deadline-batches", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}, Messages: 2},
			{Changelist: "cl2", Version: 1, Recipients: []string{"b@example.com"}}},
			Batch: 3, Deadlines: true, Overruns: true, MaxFaults: 1, SendFaults: []Outcome{}, MaxTicks: 1, MaxSweeps: 0, MaxDepth: 18, DeepDepth: 24},
	}
}

// runTo steps process label with OK answers until it parks at the call
// named at, or panics (a start that no longer reaches its state).
func (w *world) runTo(label, at string) {
	for range 200 {
		p := w.sched.find(label)
		if p == nil {
			panic(fmt.Sprintf("explore: start: %s finished before %s", label, at))
		}
		if p.at != nil && p.at.name == at {
			return
		}
		w.sched.step(p, OK)
	}
	panic(fmt.Sprintf("explore: start: %s never reached %s", label, at))
}

// runOut steps process label with OK answers until it finishes, or
// panics.
func (w *world) runOut(label string) {
	for range 200 {
		p := w.sched.find(label)
		if p == nil {
			return
		}
		w.sched.step(p, OK)
	}
	panic(fmt.Sprintf("explore: start: %s never finished", label))
}

// abandonedClaim: the first notify message is received, its notifier
// claims the row and is killed at the send (nothing was sent); the
// message comes back after its visibility timeout. Five minutes on (the
// lease long over, the job not yet stuck), other reviews' events have
// moved the evidence path past the claim: an event newer than it
// recorded, the feedback queue found drained since.
func abandonedClaim(w *world) {
	ctx := context.Background()
	w.apply(Action{Kind: Deliver, Target: w.notifyQ.msgs[0].id})
	w.runTo("notify#1", "ses.Send")
	w.apply(Action{Kind: Kill, Target: "notify#1"})
	w.now = epoch().Add(5 * time.Minute)
	seen := w.now.Add(-30 * time.Second)
	if err := w.evidence.Advance(ctx, w.sc.ConfigurationSet, seen); err != nil {
		panic(err)
	}
	if err := w.evidence.Drain(ctx, w.sc.ConfigurationSet, seen); err != nil {
		panic(err)
	}
}

// abandonedClaimHeld is abandonedClaim with the notify message gone
// (moved to the DLQ by the redrive policy, its receives spent, as it is)
// and the job needs_intervention, as a notifier marks it while the row is
// held for evidence: the sweeper's job pick passes it over (a verdict),
// and only its pick of the row stuck in sending hands it back to notify.
func abandonedClaimHeld(w *world) {
	abandonedClaim(w)
	moveToDLQ(w)
	if err := w.jobsMem.SetStatus(context.Background(), w.jobIDs[0], job.StageNotify, job.StatusNeedsIntervention, store.JobWrite{}); err != nil {
		panic(err)
	}
}

// lostNotifyMessage: the job waits at notify and its message is gone
// (moved to the DLQ by the redrive policy); the clock is just past the
// sweeper's stuck threshold: only the sweeper's job pick finds it.
func lostNotifyMessage(w *world) {
	moveToDLQ(w)
	w.now = epoch().Add(w.sc.Config.StuckAfter + time.Second)
}

// moveToDLQ moves every notify message to the DLQ as the redrive policy
// does: as it is, no envelope.
func moveToDLQ(w *world) {
	for _, m := range w.notifyQ.msgs {
		if !m.deleted {
			m.deleted = true
			moved := *m
			moved.deleted = false
			w.notifyQ.dlq.msgs = append(w.notifyQ.dlq.msgs, &moved)
		}
	}
}
