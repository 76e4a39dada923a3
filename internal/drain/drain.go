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
//
// Steady traffic is not a backlog. Under steady traffic the queue is
// rarely empty at one instant: some message is always in flight in a
// feedback invocation. What matters is whether every message that reached
// the queue before a time has been processed, and SQS tells no message's
// age: GetQueueAttributes has counters only (CloudWatch's
// ApproximateAgeOfOldestMessage is a metric, of one-minute periods, and
// leaves out a message received three times or more — exactly the one
// that keeps failing). What does bound a message's age is how SQS moves
// it: a message in flight becomes visible again or is deleted within the
// queue's visibility timeout (nothing here extends it), and each receive
// counts, so after maxReceiveCount receives it is in the DLQ. A visible
// message is counted, and a reading sees it unless it stays visible for
// less than the readings' spacing plus Lag. So readings are kept in runs
// (store.Evidence.Observe): a run of clear readings — no visible or
// delayed message in the queue, nothing in its DLQ — made on the
// sweeper's schedule (Every), each at most 2·Every after the last. One
// reading that is not clear is tolerated (the message it saw may be
// seconds old); such readings for Every or longer, or a missed reading,
// end the run, and so does anything in the DLQ. Over a run, a message that
// is still unprocessed and not dead-lettered has spent it alternating
// visible spells of less than 3·Every+Lag each and receives of at most
// the visibility timeout, at most maxReceiveCount of them. Once the run is
// longer than that,
//
//	Horizon = (maxReceiveCount+1)·(3·Every+Lag) + maxReceiveCount·VisibilityTimeout,
//
// every message older than now−Horizon has been processed: the drain time
// moves to now−Horizon. With the deployed settings (10 receives, a 61 s
// visibility timeout, a reading every minute, Lag two minutes) that is
// about 65 minutes: under steady traffic a send whose answer was lost is
// resent after about an hour and ten minutes instead of never. A backlog
// (a visible count that persists), a failing event (it ends in the DLQ)
// and a sweeper that stops keep ending the run; a record quarantined by
// the feedback function (R-EVIDENCE-10) is no longer in either queue.
package drain

import (
	"context"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/store"
)

// Counts are a queue's GetQueueAttributes counters:
// ApproximateNumberOfMessages (visible), ...NotVisible (in flight) and
// ...Delayed; and the settings that bound how long a message can stay in
// it unseen: VisibilityTimeout, and the redrive policy's maxReceiveCount
// (zero when the queue has none, or the reader does not tell).
type Counts struct {
	Visible, InFlight, Delayed int
	VisibilityTimeout          time.Duration
	MaxReceiveCount            int
}

// Empty reports whether the queue holds no message in any state.
func (c Counts) Empty() bool { return c.Visible == 0 && c.InFlight == 0 && c.Delayed == 0 }

// clear reports whether no message waits in the queue unreceived: none
// visible, none delayed. Messages in flight may remain.
func (c Counts) clear() bool { return c.Visible == 0 && c.Delayed == 0 }

// Counter reads a queue's counters (queue.Client.Counts on SQS).
type Counter interface {
	Counts(ctx context.Context, queueURL string) (Counts, error)
}

// Recorder keeps the drain time and the run of clear readings
// (store.Evidence's Drain and Observe).
type Recorder interface {
	Drain(ctx context.Context, set string, at time.Time) error
	Observe(ctx context.Context, set string, at time.Time, r store.Reading, every time.Duration) (time.Time, error)
}

// Checker reads the feedback queue and its DLQ and records the drain
// time when both are empty.
type Checker struct {
	Counter Counter
	// Queue and DLQ are the feedback queue's URL and its dead-letter
	// queue's.
	Queue, DLQ string
	// Lag is how stale an empty reading may be (see the package comment).
	Lag time.Duration
	// Every is the sweeper's schedule (CRITICIZER_SWEEP_EVERY), which the
	// runs of clear readings are kept by; zero: only an empty reading
	// moves the drain time.
	Every    time.Duration
	Evidence Recorder
	// Set is the SES configuration set whose events the queue carries.
	Set string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Check reads the counters once and reports whether the drain time
// moved: to the reading's start minus Lag when the queue and its DLQ were
// empty; to its start minus the Horizon when the reading ends a run of
// clear readings longer than the Horizon (see the package comment).
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
	var read [3]Counts
	for i, url := range []string{c.Queue, c.DLQ, c.Queue} {
		n, err := c.Counter.Counts(ctx, url)
		if err != nil {
			return false, fmt.Errorf("drain: read %s: %w", url, err)
		}
		read[i] = n
	}
	empty := read[0].Empty() && read[1].Empty() && read[2].Empty()
	clear := read[0].clear() && read[1].Empty() && read[2].clear()
	r := store.ReadingClear
	switch {
	case !read[1].Empty():
		r = store.ReadingDeadLettered
	case !clear:
		r = store.ReadingVisible
	}
	var since time.Time
	if c.Every > 0 {
		var err error
		if since, err = c.Evidence.Observe(ctx, c.Set, at, r, c.Every); err != nil {
			// The run is only for the steady-traffic case; an empty
			// reading still counts.
			since = time.Time{}
		}
	}
	switch h := c.Horizon(read[0]); {
	case empty:
		return true, c.Evidence.Drain(ctx, c.Set, at.Add(-c.Lag))
	case clear && h > 0 && !since.IsZero() && at.Sub(since) > h:
		return true, c.Evidence.Drain(ctx, c.Set, at.Add(-h))
	}
	return false, nil
}

// Horizon is how long a message can stay unprocessed in the queue q
// without a reading of a run of clear readings seeing it (see the package
// comment); zero when q does not tell its visibility timeout or its
// maxReceiveCount, or Every is zero: then only an empty reading counts.
func (c *Checker) Horizon(q Counts) time.Duration {
	if c.Every <= 0 || q.VisibilityTimeout <= 0 || q.MaxReceiveCount <= 0 {
		return 0
	}
	n := time.Duration(q.MaxReceiveCount)
	return (n+1)*(3*c.Every+c.Lag) + n*q.VisibilityTimeout
}
