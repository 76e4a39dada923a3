package retry

import (
	"math"
	"testing"
	"time"
)

// R-STAGE-2: initial_delay 1s, multiplier 2.0, max_delay 60s; R-STAGE-3:
// max_attempts_per_stage 5; R-STAGE-2: ceiling of 5 minutes.
func TestDefaultPolicy_Parameters(t *testing.T) {
	p := DefaultPolicy()
	want := Policy{Initial: time.Second, Max: time.Minute, Ceiling: 5 * time.Minute, Multiplier: 2.0, MaxAttempts: 5}
	if p != want {
		t.Errorf("DefaultPolicy() = %+v, want %+v", p, want)
	}
}

// R-STAGE-2: "actual_delay = random(0, min(max_delay, initial_delay *
// multiplier^(attempt-1)))".
func TestBackoff_CapSequence(t *testing.T) {
	p := DefaultPolicy()
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		if got := p.Cap(i + 1); got != w*time.Second {
			t.Errorf("Cap(%d) = %v, want %v", i+1, got, w*time.Second)
		}
	}
	for _, a := range []int{0, -1, math.MinInt} {
		if got := p.Cap(a); got != time.Second {
			t.Errorf("Cap(%d) = %v, want attempt<1 treated as 1 (1s)", a, got)
		}
	}
}

// R-STAGE-2: "jitter: full jitter (actual_delay = random(0, min(max_delay,
// initial_delay * multiplier^(attempt-1))))". Statistical check: every draw
// lies in [0, cap], the mean is cap/2 and both halves of the range are hit
// about equally.
func TestBackoff_FullJitterBounds(t *testing.T) {
	const draws = 10000
	p := DefaultPolicy()
	rnd := NewRand(20250301)
	for attempt := 1; attempt <= 8; attempt++ {
		c := p.Cap(attempt)
		var sum float64
		var low, high int
		for range draws {
			d := p.Backoff(attempt, rnd)
			if d < 0 || d > c {
				t.Fatalf("attempt %d: draw %v outside [0, %v]", attempt, d, c)
			}
			sum += float64(d)
			if d < c/2 {
				low++
			} else {
				high++
			}
		}
		mean := sum / draws
		// Uniform on [0,c]: sd = c/√12 ≈ 0.289c, standard error of the mean
		// ≈ 0.0029c; 3% of c is more than ten standard errors.
		if math.Abs(mean-float64(c)/2) > 0.03*float64(c) {
			t.Errorf("attempt %d: mean %v, want ≈ %v", attempt, time.Duration(mean), c/2)
		}
		if low < draws*45/100 || high < draws*45/100 {
			t.Errorf("attempt %d: lower half %d, upper half %d of %d draws", attempt, low, high, draws)
		}
	}
}

// R-STAGE-2: "Backoff timers MUST be recomputed per attempt (no
// precomputed static schedule)". The delay depends only on the policy in
// force and the attempt number at the time of the call.
func TestBackoff_RecomputedPerAttempt(t *testing.T) {
	p := DefaultPolicy()
	rnd := NewRand(1)
	for range 100 {
		if d := p.Backoff(3, rnd); d > 4*time.Second {
			t.Fatalf("Backoff(3) = %v > 4s", d)
		}
	}
	// A policy change takes effect on the very next computation.
	p.Max = 2 * time.Second
	for range 100 {
		if d := p.Backoff(3, rnd); d > 2*time.Second {
			t.Fatalf("after lowering Max, Backoff(3) = %v > 2s", d)
		}
	}
	// Repeated calls for the same attempt draw afresh, not from a schedule.
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[p.Backoff(5, rnd)] = true
	}
	if len(seen) < 2 {
		t.Error("Backoff returned a fixed value for repeated calls")
	}
}

// R-STAGE-2: "actual_delay = random(0, min(max_delay, initial_delay *
// multiplier^(attempt-1)))" — evaluated at absurd attempt numbers the min
// must still hold: saturate, never overflow into negative delays.
func TestBackoff_HugeAttemptNoOverflow(t *testing.T) {
	p := DefaultPolicy()
	rnd := NewRand(7)
	for _, a := range []int{64, 1024, 1 << 40, math.MaxInt} {
		if c := p.Cap(a); c != time.Minute {
			t.Errorf("Cap(%d) = %v, want 60s", a, c)
		}
		if d := p.Backoff(a, rnd); d < 0 || d > time.Minute {
			t.Errorf("Backoff(%d) = %v", a, d)
		}
	}
	unbounded := Policy{Initial: time.Second, Multiplier: 2}
	if c := unbounded.Cap(math.MaxInt); c != math.MaxInt64 {
		t.Errorf("unbounded Cap = %v, want saturation at MaxInt64", c)
	}
	if d := unbounded.Backoff(math.MaxInt, rnd); d < 0 {
		t.Errorf("unbounded Backoff = %v", d)
	}
	odd := Policy{Initial: time.Second, Max: time.Minute, Multiplier: math.NaN()}
	if c := odd.Cap(10); c != time.Second {
		t.Errorf("NaN multiplier Cap = %v, want 1s (constant)", c)
	}
	if c := (Policy{}).Cap(3); c != 0 {
		t.Errorf("zero policy Cap = %v", c)
	}
}

// R-STAGE-2: "random(0, min(max_delay, ...))" — without a random source the
// delay is the upper bound of that range, never more.
func TestBackoff_NilRandIsUpperBound(t *testing.T) {
	p := DefaultPolicy()
	for a := 1; a <= 8; a++ {
		if got := p.Backoff(a, nil); got != p.Cap(a) {
			t.Errorf("Backoff(%d, nil) = %v, want %v", a, got, p.Cap(a))
		}
	}
}

// R-STAGE-2: "unless an upstream Retry-After value is larger" and rule 2:
// "effective delay is max(calculated_backoff, retry_after), capped by an
// operational ceiling of 5 minutes".
func TestDelay_RetryAfterMaxAndCeiling(t *testing.T) {
	p := DefaultPolicy()
	rnd := NewRand(3)
	for attempt := 1; attempt <= 8; attempt++ {
		if d := p.Delay(attempt, 90*time.Second, rnd); d != 90*time.Second {
			t.Errorf("attempt %d: Delay with Retry-After 90s = %v", attempt, d)
		}
		if d := p.Delay(attempt, time.Hour, rnd); d != 5*time.Minute {
			t.Errorf("attempt %d: Delay with Retry-After 1h = %v, want 5m ceiling", attempt, d)
		}
		if d := p.Delay(attempt, 0, rnd); d < 0 || d > p.Cap(attempt) {
			t.Errorf("attempt %d: Delay without Retry-After = %v", attempt, d)
		}
		if d := p.Delay(attempt, -time.Second, rnd); d < 0 || d > p.Cap(attempt) {
			t.Errorf("attempt %d: Delay with negative Retry-After = %v", attempt, d)
		}
	}
	// The backoff wins when it is larger than a small Retry-After.
	if d := p.Delay(7, time.Millisecond, nil); d != time.Minute {
		t.Errorf("Delay(7, 1ms, nil) = %v, want 60s", d)
	}
}

// R-STAGE-3: "max_attempts_per_stage: 5 (inclusive of first attempt)".
func TestExhausted_FiveAttemptsInclusive(t *testing.T) {
	p := DefaultPolicy()
	for attempt := 1; attempt <= 4; attempt++ {
		if p.Exhausted(attempt) {
			t.Errorf("Exhausted(%d) = true with budget 5", attempt)
		}
	}
	for _, attempt := range []int{5, 6, 100} {
		if !p.Exhausted(attempt) {
			t.Errorf("Exhausted(%d) = false with budget 5", attempt)
		}
	}
	if !(Policy{}).Exhausted(1) {
		t.Error("a zero policy must not retry forever")
	}
}
