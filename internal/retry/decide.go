package retry

import (
	"math/rand/v2"
	"time"
)

// Decision is what a stage does after a failed attempt.
type Decision struct {
	Retry     bool          // schedule another attempt after Delay
	Delay     time.Duration // zero unless Retry
	Err       *Error        // the classified failure
	Exhausted bool          // retries stopped because the budget is spent, not because of the class
}

// Decide classifies err and decides whether the stage tries again. It
// applies, in order: R-STAGE-2 (a non-retryable failure stops retries at
// once, whatever budget is left), R-STAGE-3 (the per-stage budget), then R-STAGE-2
// (the delay, honouring Retry-After up to the ceiling).
//
// attempt is the 1-based number of the attempt that just failed. A nil err
// yields the zero Decision.
func (p Policy) Decide(attempt int, err error, rnd *rand.Rand) Decision {
	c := Classify(err)
	if c == nil {
		return Decision{}
	}
	if !c.Retryable() {
		return Decision{Err: c}
	}
	if p.Exhausted(attempt) {
		return Decision{Err: c, Exhausted: true}
	}
	return Decision{Retry: true, Delay: p.Delay(attempt, c.RetryAfter, rnd), Err: c}
}
