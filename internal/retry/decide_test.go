package retry

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// R-STAGE-2: "Retries MUST stop immediately when a failure is reclassified
// to non-retryable."
func TestDecide_ReclassifiedNonRetryableStops(t *testing.T) {
	p := DefaultPolicy()
	rnd := NewRand(11)
	upstream := &HTTPStatusError{Status: 503, Op: "llm.Complete"}

	d := p.Decide(1, upstream, rnd)
	if !d.Retry || d.Err.Class != Upstream5xx {
		t.Fatalf("503 on attempt 1: %+v, want a retry", d)
	}

	// The stage learns the failure is permanent (e.g. the model refused the
	// content): no further attempt even though 4 remain.
	reclassified := Permanent(PolicyRejected, fmt.Errorf("moderation: %w", upstream))
	d = p.Decide(2, reclassified, rnd)
	if d.Retry || d.Exhausted || d.Delay != 0 {
		t.Errorf("after reclassification: %+v, want an immediate stop", d)
	}
	// Even a retryable class stops when forced permanent.
	d = p.Decide(1, Permanent(Upstream5xx, upstream), rnd)
	if d.Retry {
		t.Errorf("Permanent(Upstream5xx) retried: %+v", d)
	}
}

// R-STAGE-1: non-retryable failures "fail immediately to dead-letter queue".
func TestDecide_NonRetryableFailsImmediately(t *testing.T) {
	d := DefaultPolicy().Decide(1, &HTTPStatusError{Status: 401}, NewRand(1))
	if d.Retry || d.Exhausted || d.Err.Class != AuthDenied {
		t.Errorf("401 on attempt 1: %+v", d)
	}
}

// R-STAGE-3: "If a stage exhausts budget, processing transitions to dead-letter".
func TestDecide_BudgetExhausted(t *testing.T) {
	p := DefaultPolicy()
	rnd := NewRand(5)
	err := errors.New("flaky")
	for attempt := 1; attempt <= 4; attempt++ {
		d := p.Decide(attempt, err, rnd)
		if !d.Retry || d.Delay > p.Cap(attempt) {
			t.Errorf("attempt %d: %+v", attempt, d)
		}
	}
	d := p.Decide(5, err, rnd)
	if d.Retry || !d.Exhausted || d.Err.Class != Unknown || !d.Err.Retryable() {
		t.Errorf("attempt 5: %+v, want exhausted with a retryable class", d)
	}
	if (p.Decide(1, nil, rnd) != Decision{}) {
		t.Error("nil error must give the zero Decision")
	}
}

// R-STAGE-2: Retry-After larger than the backoff wins, up to the ceiling.
func TestDecide_HonoursRetryAfter(t *testing.T) {
	d := DefaultPolicy().Decide(1, WithRetryAfter(&HTTPStatusError{Status: 429}, 45*time.Second), NewRand(2))
	if !d.Retry || d.Delay != 45*time.Second {
		t.Errorf("got %+v, want retry after 45s", d)
	}
}
