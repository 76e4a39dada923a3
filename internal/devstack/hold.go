package devstack

import (
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// HoldOnce is a Poller.Hold that keeps each message Match chooses in
// flight for For the first time a poller receives it, and lets it through
// when it comes back: one message that arrives minutes late while newer
// ones flow, its receive count one higher, the way the message of a
// timed-out batch returns on AWS. Safe for concurrent pollers.
//
//	h := &devstack.HoldOnce{Match: isTheSendEvent, For: 7 * time.Minute}
//	opts.Hold = func(fn string, m events.SQSMessage) time.Duration {
//		if fn != "feedback" { return 0 }
//		return h.Hold(m)
//	}
type HoldOnce struct {
	Match func(events.SQSMessage) bool
	For   time.Duration

	mu   sync.Mutex
	held map[string]time.Time // SQS message id → when it was held
}

// Hold is the Poller.Hold.
func (h *HoldOnce) Hold(m events.SQSMessage) time.Duration {
	if h.Match == nil || !h.Match(m) {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, done := h.held[m.MessageId]; done {
		return 0
	}
	if h.held == nil {
		h.held = map[string]time.Time{}
	}
	h.held[m.MessageId] = time.Now()
	return h.For
}

// Held returns the ids of the messages held so far.
func (h *HoldOnce) Held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.held))
	for id := range h.held {
		ids = append(ids, id)
	}
	return ids
}
