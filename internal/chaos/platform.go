package chaos

import (
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/sesevent"
)

// platformFaults plays the AWS behaviours the local stack reproduces
// (docs/local-stack.md) on the feedback path, at the campaign's rate:
//
//   - event_late: the feedback poller keeps a message in flight for
//     18–36 s (minutes, scaled) before the function sees it, while newer
//     events flow — a timed-out feedback batch coming back (Poller.Hold).
//     Every Send event of a send whose answer a fault lost is held so:
//     the row waits for exactly that event;
//   - feedback_redrive: a feedback message is failed on every receive
//     until SQS moves it to the feedback DLQ; a redriver starts a message
//     move task (StartMessageMoveTask, through the SQS proxy) whenever the
//     DLQ holds messages, during the campaign and in its drain, and the
//     messages come back with new ids;
//   - validation_notice: SES's plain-text notice is published onto the
//     events topic again at random times.
//
// timeout_kill, the fourth platform kind, is an AWS call that hangs; the
// injector draws it (inject.go). Each kind fires at its first chance, so
// every campaign has at least one of each.
type platformFaults struct {
	rate float64
	on   atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	byKind  map[Kind]int
	hits    map[job.ID]map[Kind]int
	jobOf   func(deliveryID string) (job.ID, bool)
	lost    func(deliveryID string) bool // the send's answer was lost
	decided map[string]bool              // SQS message ids whose hold was decided
	doomed  map[string]bool              // SQS message ids failed until they are dead-lettered
	killed  map[string]int               // function → invocations killed at their timeout

	heldLost        int   // Send events of lost answers held
	redrives        int   // move tasks run
	redriven        int64 // messages they moved
	redriveFailures int
	notice          func(context.Context) error
}

func newPlatformFaults(seed uint64, rate float64, jobOf func(string) (job.ID, bool), lost func(string) bool) *platformFaults {
	return &platformFaults{rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x91a7f0)), byKind: map[Kind]int{},
		hits: map[job.ID]map[Kind]int{}, jobOf: jobOf, lost: lost, decided: map[string]bool{}, doomed: map[string]bool{},
		killed: map[string]int{}}
}

// Campaign timings of the platform kinds.
const (
	lateMin, lateSpread = 18, 19 // seconds: a held message is 18–36 s late
	// feedbackMaxReceives is the campaign's feedback queue maxReceiveCount
	// (10 deployed, scaled like its visibility timeout): a doomed message
	// reaches the DLQ after about this many visibility timeouts.
	feedbackMaxReceives = 4
	redriveEvery        = 8 * time.Second
	noticeTick          = 500 * time.Millisecond
)

func (f *platformFaults) hit(k Kind, deliveryID string) {
	f.byKind[k]++
	if id, ok := f.jobOf(deliveryID); ok {
		if f.hits[id] == nil {
			f.hits[id] = map[Kind]int{}
		}
		f.hits[id][k]++
	}
}

// hold is the pollers' Hold: it decides once per feedback message whether
// the message arrives late.
//
// A Send event of a lost answer is held even once faults are off: the
// answer was lost while they were on, and its event comes seconds later.
func (f *platformFaults) hold(fn string, m events.SQSMessage) time.Duration {
	if fn != "feedback" || sesevent.IsValidationNotice([]byte(m.Body)) {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.decided[m.MessageId] {
		return 0 // back from its hold, or let through the first time
	}
	did, typ := eventOf(m.Body)
	lostSend := typ == "Send" && did != "" && f.lost(did)
	if !lostSend && !f.on.Load() {
		return 0
	}
	f.decided[m.MessageId] = true
	if !lostSend && f.byKind[KindEventLate] > 0 && f.rng.Float64() >= f.rate {
		return 0
	}
	if lostSend {
		f.heldLost++
	}
	f.hit(KindEventLate, did)
	return time.Duration(lateMin+f.rng.IntN(lateSpread)) * time.Second
}

// feedback wraps the feedback function: a doomed record is failed on
// every receive (left out of the batch), so SQS dead-letters it after
// feedbackMaxReceives receives. A record is doomed when first seen while
// faults are on; a redriven one has a new id, so it is judged afresh.
func (f *platformFaults) feedback(h devstack.SQSHandler) devstack.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var keep []events.SQSMessage
		var failed []string
		f.mu.Lock()
		for _, r := range ev.Records {
			if !f.doomed[r.MessageId] && f.on.Load() && !f.decided["doom:"+r.MessageId] {
				f.decided["doom:"+r.MessageId] = true
				if f.byKind[KindFeedbackRedrive] == 0 || f.rng.Float64() < f.rate {
					f.doomed[r.MessageId] = true
					did, _ := eventOf(r.Body)
					f.hit(KindFeedbackRedrive, did)
				}
			}
			if f.doomed[r.MessageId] {
				failed = append(failed, r.MessageId)
				continue
			}
			keep = append(keep, r)
		}
		f.mu.Unlock()
		var resp events.SQSEventResponse
		var err error
		if len(keep) > 0 {
			resp, err = h(ctx, events.SQSEvent{Records: keep})
		}
		for _, id := range failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, err
	}
}

// onKill is the pollers' OnKill.
func (f *platformFaults) onKill(fn string, _ events.SQSEvent) {
	f.mu.Lock()
	f.killed[fn]++
	f.mu.Unlock()
}

// run publishes validation notices while faults are on (the first at
// once) and redrives the feedback DLQ whenever it holds messages, until
// ctx is done.
func (f *platformFaults) run(ctx context.Context, c *sqs.Client, dlqURL, dlqARN string, log *slog.Logger) {
	notices := time.NewTicker(noticeTick)
	defer notices.Stop()
	redrive := time.NewTicker(redriveEvery)
	defer redrive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-notices.C:
			f.mu.Lock()
			due := f.on.Load() && (f.byKind[KindValidationNotice] == 0 || f.rng.Float64() < f.rate)
			publish := f.notice
			f.mu.Unlock()
			if due && publish != nil {
				if err := publish(ctx); err != nil {
					log.WarnContext(ctx, "chaos: validation notice not published", "error", err)
					continue
				}
				f.mu.Lock()
				f.byKind[KindValidationNotice]++
				f.mu.Unlock()
			}
		case <-redrive.C:
			f.redrive(ctx, c, dlqURL, dlqARN, log)
		}
	}
}

// redrive moves the feedback DLQ's messages back, if it has any, with a
// message move task, as an operator would.
func (f *platformFaults) redrive(ctx context.Context, c *sqs.Client, dlqURL, dlqARN string, log *slog.Logger) {
	n, err := queue.New(c, queue.URLs{}).Counts(ctx, dlqURL)
	if err != nil || n.Visible == 0 {
		return
	}
	moved, err := devstack.Redrive(ctx, c, dlqARN)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redrives++
	f.redriven += moved
	if err != nil && ctx.Err() == nil {
		f.redriveFailures++
		log.WarnContext(ctx, "chaos: feedback DLQ redrive failed", "error", err)
	}
}

// forced reports whether every platform kind fired and every function
// was killed at its timeout at least once.
func (f *platformFaults) forced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range []Kind{KindEventLate, KindFeedbackRedrive, KindValidationNotice} {
		if f.byKind[k] == 0 {
			return false
		}
	}
	for _, fn := range killedFunctions() {
		if f.killed[fn] == 0 {
			return false
		}
	}
	return true
}

func (f *platformFaults) injected() map[Kind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.byKind)
}

func (f *platformFaults) jobHits(id job.ID) map[Kind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.hits[id])
}

// figures fills the report's platform figures.
func (f *platformFaults) figures(r *Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Killed = map[string]int{}
	for fn, n := range f.killed {
		r.Killed[fn] = n
	}
	r.HeldLate, r.HeldLostSends = f.byKind[KindEventLate], f.heldLost
	r.Doomed, r.Redrives, r.Redriven, r.RedriveFailures = f.byKind[KindFeedbackRedrive], f.redrives, f.redriven, f.redriveFailures
	r.Notices = f.byKind[KindValidationNotice]
}

// eventOf reads an SES event record's delivery id and event type, or "".
func eventOf(body string) (deliveryID, eventType string) {
	ev, err := sesevent.Parse([]byte(body))
	if err != nil {
		return "", ""
	}
	return ev.DeliveryID(), ev.EventType
}
