// Package drain tells when the evidence path has processed everything
// that reached it, so that a missing SES event can mean something
// (R-EVIDENCE-2).
//
// Why a newest-event watermark is not enough: SQS standard queues keep no
// order. A Send event can sit in the feedback queue — behind a batch
// whose invocation timed out and whose messages come back minutes later,
// retried after a failure, in the DLQ waiting for a redrive — while newer
// events are received and recorded. Any watermark built from the events
// seen so far passes that event, and the notifier would resend a message
// SES did accept. What no reordering can hide is a message still in the
// queue: SQS counts it as visible, in flight or delayed, and a message in
// the DLQ is counted there. So the drain time moves only when the
// feedback queue and its DLQ are both found empty: every message that
// reached the queue before then has been deleted, which the feedback
// function does only once it has recorded the event (or known it for no
// evidence at all).
//
// The counters are approximate: SQS documents that they "may not achieve
// consistency until at least 1 minute after the producers stop sending
// messages". The drain time recorded is therefore the time of the reading
// minus Lag (CRITICIZER_EVIDENCE_COUNTER_LAG, 2 minutes by default): an
// empty reading speaks only for messages older than that.
//
// The queues are read main, DLQ, main: a message moved from the queue to
// the DLQ (its receives spent) between the first two readings was in the
// queue at the first; one redriven from the DLQ to the queue between the
// last two is in the queue at the third.
package drain

import (
	"context"
	"fmt"
	"time"
)

// Counts are a queue's GetQueueAttributes counters:
// ApproximateNumberOfMessages (visible), ...NotVisible (in flight) and
// ...Delayed.
type Counts struct {
	Visible, InFlight, Delayed int
}

// Empty reports whether the queue holds no message in any state.
func (c Counts) Empty() bool { return c.Visible == 0 && c.InFlight == 0 && c.Delayed == 0 }

// Counter reads a queue's counters (queue.Client.Counts on SQS).
type Counter interface {
	Counts(ctx context.Context, queueURL string) (Counts, error)
}

// Recorder keeps the drain time (store.Evidence.Drain).
type Recorder interface {
	Drain(ctx context.Context, set string, at time.Time) error
}

// Checker reads the feedback queue and its DLQ and records the drain
// time when both are empty.
type Checker struct {
	Counter Counter
	// Queue and DLQ are the feedback queue's URL and its dead-letter
	// queue's.
	Queue, DLQ string
	// Lag is how stale an empty reading may be (see the package comment).
	Lag      time.Duration
	Evidence Recorder
	// Set is the SES configuration set whose events the queue carries.
	Set string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Check reads the counters once and reports whether the queues were
// empty; if they were, the drain time (the reading's start minus Lag) is
// recorded.
func (c *Checker) Check(ctx context.Context) (bool, error) {
	if c.Queue == "" || c.DLQ == "" {
		// A queue whose DLQ is not read could hold an event there unseen.
		return false, fmt.Errorf("drain: the feedback queue and its DLQ must both be configured")
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now().UTC()
	for _, url := range []string{c.Queue, c.DLQ, c.Queue} {
		n, err := c.Counter.Counts(ctx, url)
		if err != nil {
			return false, fmt.Errorf("drain: read %s: %w", url, err)
		}
		if !n.Empty() {
			return false, nil
		}
	}
	if err := c.Evidence.Drain(ctx, c.Set, at.Add(-c.Lag)); err != nil {
		return true, err
	}
	return true, nil
}
