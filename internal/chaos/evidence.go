package chaos

import (
	"context"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/sesevent"
)

// evidenceFaults plays a faulty SES event path between the SES emulator's
// bridge and the feedback queue, and a faulty feedback function:
//
//   - event_delay: the whole path stalls for a few seconds (longer than a
//     lease plus the margin), then delivers what it held, in order — SES
//     events "delayed by minutes", scaled to the campaign's clock;
//   - event_reorder: a poll's events are delivered in random order (SNS
//     keeps no order; the spread stays within the margin);
//   - event_duplicate: an event is delivered twice (SNS and SQS are
//     at-least-once), the copy up to a second later;
//   - event_drop: one of a message's two events (Send, Delivery) is lost;
//     the other still arrives. Losing every event of a message is the
//     window the design cannot close (docs/architecture.md, "The remaining window"); it
//     is shown by its own test, not injected here;
//   - feedback_fail: the feedback function fails a record, before or after
//     recording it, and SQS delivers it again.
type evidenceFaults struct {
	rate float64
	on   atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	byKind  map[Kind]int
	hits    map[job.ID]map[Kind]int
	jobOf   func(deliveryID string) (job.ID, bool)
	stall   time.Time // the path is stalled until then
	held    []heldEvent
	publish func(context.Context, devstack.SESEvent) error
}

type heldEvent struct {
	due time.Time
	ev  devstack.SESEvent
}

func newEvidenceFaults(seed uint64, rate float64, jobOf func(string) (job.ID, bool)) *evidenceFaults {
	return &evidenceFaults{rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x5e5e5e5e)), byKind: map[Kind]int{},
		hits: map[job.ID]map[Kind]int{}, jobOf: jobOf}
}

// hit counts an injected fault against the job of the event (if any).
func (f *evidenceFaults) hit(k Kind, deliveryID string) {
	f.byKind[k]++
	if id, ok := f.jobOf(deliveryID); ok {
		if f.hits[id] == nil {
			f.hits[id] = map[Kind]int{}
		}
		f.hits[id][k]++
	}
}

// deliver is the bridge's Deliver: it decides each event's fate and queues
// it; run publishes what is due.
func (f *evidenceFaults) deliver(_ context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publish = publish
	now := time.Now()
	on := f.on.Load()
	if on && now.After(f.stall) && f.rng.Float64() < 2*f.rate {
		// Stall for longer than a lease plus twice the margin: the rows of
		// lost answers in this window are held, not resent.
		f.stall = now.Add(time.Duration(8+f.rng.IntN(8)) * time.Second)
		for _, e := range evs {
			f.hit(KindEventDelay, e.DeliveryID)
		}
	}
	due := now
	if now.Before(f.stall) {
		due = f.stall
	}
	if on && len(evs) > 1 && f.rng.Float64() < f.rate*3 {
		f.rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		for _, e := range evs {
			f.hit(KindEventReorder, e.DeliveryID)
		}
	}
	dropped := map[string]bool{} // message id → one of its events dropped
	for _, e := range evs {
		if on && !dropped[e.MessageID] && f.rng.Float64() < f.rate {
			dropped[e.MessageID] = true
			f.hit(KindEventDrop, e.DeliveryID)
			continue
		}
		f.held = append(f.held, heldEvent{due: due, ev: e})
		if on && f.rng.Float64() < f.rate {
			f.hit(KindEventDuplicate, e.DeliveryID)
			f.held = append(f.held, heldEvent{due: due.Add(time.Duration(f.rng.IntN(1000)) * time.Millisecond), ev: e})
		}
	}
	return nil
}

// run publishes held events when due, oldest due first, until ctx is done;
// then it publishes what is left.
func (f *evidenceFaults) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.flush(context.WithoutCancel(ctx), time.Time{})
			return
		case <-t.C:
			f.flush(ctx, time.Now())
		}
	}
}

// flush publishes the events due by now (every one when now is zero).
func (f *evidenceFaults) flush(ctx context.Context, now time.Time) {
	f.mu.Lock()
	sort.SliceStable(f.held, func(i, j int) bool { return f.held[i].due.Before(f.held[j].due) })
	n := 0
	for n < len(f.held) && (now.IsZero() || !f.held[n].due.After(now)) {
		n++
	}
	due := append([]heldEvent(nil), f.held[:n]...)
	publish := f.publish
	f.mu.Unlock()
	sent := 0
	for _, h := range due {
		if err := publish(ctx, h.ev); err != nil {
			break // kept; tried again on the next tick
		}
		sent++
	}
	f.mu.Lock()
	f.held = f.held[sent:]
	f.mu.Unlock()
}

// drained reports whether no event is waiting.
func (f *evidenceFaults) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held) == 0
}

// feedback wraps the feedback function: a record may fail before it is
// recorded (left out of the batch) or after (recorded, then reported
// failed), and SQS delivers it again.
func (f *evidenceFaults) feedback(h devstack.SQSHandler) devstack.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var keep []events.SQSMessage
		var before, after []string
		f.mu.Lock()
		for _, r := range ev.Records {
			if !f.on.Load() || f.rng.Float64() >= f.rate {
				keep = append(keep, r)
				continue
			}
			f.hit(KindFeedbackFail, deliveryIDOf(r.Body))
			if f.rng.IntN(2) == 0 {
				before = append(before, r.MessageId)
				continue
			}
			keep = append(keep, r)
			after = append(after, r.MessageId)
		}
		f.mu.Unlock()
		resp, err := h(ctx, events.SQSEvent{Records: keep})
		for _, id := range append(before, after...) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, err
	}
}

func (f *evidenceFaults) injected() map[Kind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.byKind)
}

func (f *evidenceFaults) jobHits(id job.ID) map[Kind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.hits[id])
}

// deliveryIDOf reads the delivery id of an SES event record, or "".
func deliveryIDOf(body string) string {
	ev, err := sesevent.Parse([]byte(body))
	if err != nil {
		return ""
	}
	return ev.DeliveryID()
}
