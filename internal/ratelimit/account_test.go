package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/ratelimit"
	"github.com/criticizer/criticizer/internal/retry"
)

// fixedAccount answers Allow with a rate, or a spent quota.
type fixedAccount struct {
	rate  float64
	spent bool
	calls int
}

func (a *fixedAccount) Allow(context.Context) (float64, error) {
	a.calls++
	if a.spent {
		return 0, retry.WithRetryAfter(retry.Transient(retry.QuotaExhausted, errors.New("daily quota spent (test)")), 5*time.Minute)
	}
	return a.rate, nil
}

// The send rate follows the account's own quota (R-RATE-2): configured at
// 14/s on a sandbox account whose GetAccount says 1/s, three callers take
// three seconds, one each; the account's rate never raises the configured
// one.
func TestLimiter_PacesAtTheAccountsRateWhenLower(t *testing.T) {
	for _, tt := range []struct {
		configured int
		account    float64
		perSecond  int
	}{
		{14, 1, 1},   // sandbox: 1/s
		{14, 2.5, 2}, // fractional: rounded down
		{14, 0.5, 1}, // slower than 1/s: 1/s, its throttles are deferred
		{3, 14, 3},   // the configured rate is lower
		{3, 0, 3},    // the account's rate unknown
	} {
		c := &memCounter{}
		clk := &fakeClock{t: t0}
		l := clk.limiter(c, tt.configured)
		l.Account = &fixedAccount{rate: tt.account}
		l.MaxWait = time.Minute
		got := map[int64]int{}
		for range 3 * tt.perSecond {
			if err := l.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			got[clk.t.Unix()]++
		}
		if len(got) != 3 {
			t.Errorf("configured %d, account %.1f/s: sends per second %v, want %d in each of 3 seconds", tt.configured, tt.account, got, tt.perSecond)
		}
		for s, n := range got {
			if n != tt.perSecond {
				t.Errorf("configured %d, account %.1f/s: %d sends in second %d (%v), want %d each", tt.configured, tt.account, n, s, got, tt.perSecond)
				break
			}
		}
	}
	if got := ratelimit.EffectiveRate(0, 1); got != 0 {
		t.Errorf("configured 0 (the limiter off) with an account rate: %d, want 0", got)
	}
}

// A spent daily quota stops the send before any slot is taken, with the
// account's QUOTA_EXHAUSTED error (R-RATE-3), even with the limiter's own
// rate off.
func TestLimiter_SpentQuotaStopsBeforeASlot(t *testing.T) {
	for _, rate := range []int{14, 0} {
		c := &memCounter{}
		clk := &fakeClock{t: t0}
		l := clk.limiter(c, rate)
		l.Account = &fixedAccount{rate: 14, spent: true}
		err := l.Wait(context.Background())
		if ce := retry.Classify(err); ce == nil || ce.Class != retry.QuotaExhausted || ce.RetryAfter != 5*time.Minute {
			t.Fatalf("rate %d: Wait = %v; want QUOTA_EXHAUSTED with the account's Retry-After", rate, err)
		}
		if c.calls != 0 {
			t.Errorf("rate %d: %d slots taken for a send that cannot happen", rate, c.calls)
		}
	}
}
