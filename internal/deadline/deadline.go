// Package deadline is how a Lambda handler keeps its invocation's
// deadline (R-STAGE-9). Lambda ends an invocation at its timeout: nothing
// after that runs, no partial batch response is returned, the whole SQS
// batch becomes visible again after the queue's visibility timeout, and
// every receive counts toward the redrive policy's maxReceiveCount. So a
// handler must never be overtaken by its deadline. It
//
//   - keeps back a reserve at the end of the invocation for its
//     bookkeeping and its answer (Budget.Reserve);
//   - decides before each message whether there is time to finish it
//     (Budget.Allows), and hands back the ones it did not start;
//   - gives each outbound call (a model, an HTTP API) a timeout derived
//     from what is left (Call), not a constant that may outlive it.
//
// The stage runner (internal/stage) is built on it; a handler that is not
// a stage (the feedback function) can use Budget the same way. The
// package knows nothing of SQS or Lambda: a deadline is ctx.Deadline().
package deadline

import (
	"context"
	"time"
)

// Left is how long remains before ctx's deadline at now; ok is false when
// ctx has no deadline.
func Left(ctx context.Context, now time.Time) (left time.Duration, ok bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return d.Sub(now), true
}

// Budget divides one invocation between its messages. Its zero value
// starts every message and keeps nothing back.
type Budget struct {
	// Need is the longest one message may take, its own failure handling
	// included: a message starts only while this much is left before the
	// reserve. It is clipped to half of what the invocation had when it
	// began (Plan): a worst case longer than the whole invocation (a local
	// stack's short timeout) cannot be waited for, and the calls' own
	// derived timeouts cut what overruns.
	Need time.Duration
	// Reserve is kept back from the deadline for what follows the work:
	// recording failures, handing back the messages not started, and
	// answering. It is clipped to a quarter of the invocation (Plan).
	Reserve time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (b Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Plan is a Budget fitted to one invocation, made when it starts.
type Plan struct {
	budget    Budget
	deadline  time.Time
	bounded   bool
	need      time.Duration
	reserve   time.Duration
	returnGap time.Duration
}

// Plan fits the budget to the invocation ctx belongs to; call it once,
// when the invocation starts.
func (b Budget) Plan(ctx context.Context) Plan {
	p := Plan{budget: b}
	d, ok := ctx.Deadline()
	if !ok {
		return p
	}
	total := max(d.Sub(b.now()), 0)
	p.deadline, p.bounded = d, true
	p.reserve = min(max(b.Reserve, 0), total/4)
	p.need = min(max(b.Need, 0), (total-p.reserve)/2)
	// The answer itself: the runtime posts it to Lambda's runtime API on
	// the same host, a matter of milliseconds.
	p.returnGap = min(time.Second, p.reserve/5)
	return p
}

// Bounded reports whether the invocation has a deadline at all.
func (p Plan) Bounded() bool { return p.bounded }

// Need and Reserve are the budget's values fitted to this invocation.
func (p Plan) Need() time.Duration { return p.need }

// Reserve is what is kept back from the deadline (see Budget.Reserve).
func (p Plan) Reserve() time.Duration { return p.reserve }

// Allows reports whether a message may start now: the invocation has no
// deadline, or at least Need is left before the reserve.
func (p Plan) Allows() bool {
	if !p.bounded {
		return true
	}
	return p.deadline.Sub(p.budget.now())-p.reserve >= p.need
}

// Work returns the context the messages' work runs under: ctx, ending
// Reserve before the invocation's deadline.
func (p Plan) Work(ctx context.Context) (context.Context, context.CancelFunc) {
	if !p.bounded {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, p.deadline.Add(-p.reserve))
}

// After returns the context of the bookkeeping that follows the work
// (recording a failure, a backoff, a dead letter, handing back a message):
// not cancelled when the work's context ends, and ending just before the
// invocation's deadline, so the handler still answers.
func (p Plan) After(ctx context.Context) (context.Context, context.CancelFunc) {
	if !p.bounded {
		return context.WithCancel(context.WithoutCancel(ctx))
	}
	return context.WithDeadline(context.WithoutCancel(ctx), p.deadline.Add(-p.returnGap))
}

// Call returns the context of one outbound call: it ends after limit, or
// keep before ctx's deadline, whichever is sooner, so the caller still has
// time to use the answer (store a review, record the failure). In a short
// invocation keep shrinks to a quarter of what is left, so the call always
// gets most of it. limit <= 0 means no limit of its own: the deadline
// alone bounds the call. A call cut this way fails with
// context.DeadlineExceeded, which package retry classifies as a retryable
// NETWORK_TIMEOUT.
func Call(ctx context.Context, limit, keep time.Duration) (context.Context, context.CancelFunc) {
	end, bounded := time.Time{}, false
	now := time.Now()
	if limit > 0 {
		end, bounded = now.Add(limit), true
	}
	if d, ok := ctx.Deadline(); ok {
		left := d.Sub(now)
		keep = min(max(keep, 0), max(left, 0)/4)
		if e := d.Add(-keep); !bounded || e.Before(end) {
			end, bounded = e, true
		}
	}
	if !bounded {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, end)
}
