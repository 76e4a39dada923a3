package retry

import (
	"math"
	"math/rand/v2"
	"time"
)

// Policy is the backoff and budget policy of one stage (R-STAGE-2, R-STAGE-3). It is a
// plain value: every delay is computed from the attempt number when it is
// needed, never from a precomputed schedule (R-STAGE-2).
type Policy struct {
	Initial     time.Duration // delay bound for attempt 1
	Max         time.Duration // upper bound of the exponential term; <= 0 means unbounded
	Ceiling     time.Duration // operational cap on any delay, Retry-After included; <= 0 means none
	Multiplier  float64       // growth per attempt; values below 1 (and NaN) mean 1
	MaxAttempts int           // attempts per stage including the first; values below 1 mean 1
}

// DefaultPolicy returns the R-STAGE-2/R-STAGE-3 parameters: 1s initial delay, ×2.0,
// 60s max delay, 5 minute Retry-After ceiling, 5 attempts per stage.
func DefaultPolicy() Policy {
	return Policy{
		Initial:     time.Second,
		Max:         60 * time.Second,
		Ceiling:     5 * time.Minute,
		Multiplier:  2.0,
		MaxAttempts: 5,
	}
}

// Cap returns the upper bound of the jittered delay after the given failed
// attempt: min(Max, Initial·Multiplier^(attempt-1)). Attempts below 1 count
// as 1. The computation is done in float64 and saturates, so any attempt
// number is safe.
func (p Policy) Cap(attempt int) time.Duration {
	attempt = max(attempt, 1)
	if p.Initial <= 0 {
		return 0
	}
	limit := p.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	m := p.Multiplier
	if !(m >= 1) { // also catches NaN
		m = 1
	}
	f := float64(p.Initial) * math.Pow(m, float64(attempt-1))
	if math.IsNaN(f) || f >= float64(limit) {
		return limit
	}
	return time.Duration(f)
}

// Backoff returns the full-jitter delay for the given failed attempt:
// uniform in [0, Cap(attempt)] (R-STAGE-2). Full jitter spreads the retries of
// many workers that failed together across the whole window, which is what
// keeps a throttled upstream from being hit by synchronised waves.
//
// rnd is the caller's random source; the package keeps none, so tests are
// reproducible and workers never contend on a shared lock. A *rand.Rand is
// not safe for concurrent use: give each goroutine its own (see NewRand). A
// nil rnd disables jitter and returns Cap(attempt), the longest (most
// conservative) delay; it is meant for budgeting, not for production
// retries.
func (p Policy) Backoff(attempt int, rnd *rand.Rand) time.Duration {
	c := p.Cap(attempt)
	if rnd == nil || c <= 0 {
		return c
	}
	// c <= MaxInt64, so c+1 fits in a uint64 and the draw fits in int64.
	return time.Duration(rnd.Uint64N(uint64(c) + 1))
}

// Delay returns how long to wait before the next attempt: the jittered
// backoff, or the upstream Retry-After when that is larger, capped at
// Ceiling (R-STAGE-2). A retryAfter <= 0 means none was given.
func (p Policy) Delay(attempt int, retryAfter time.Duration, rnd *rand.Rand) time.Duration {
	d := max(p.Backoff(attempt, rnd), retryAfter)
	if p.Ceiling > 0 && d > p.Ceiling {
		d = p.Ceiling
	}
	return d
}

// Exhausted reports whether the stage budget is spent after the given
// attempt failed: attempt counts from 1 and includes the first try (R-STAGE-3),
// so with MaxAttempts 5 the fifth failure is final.
func (p Policy) Exhausted(attempt int) bool {
	return attempt >= max(p.MaxAttempts, 1)
}
