package notify

import (
	"errors"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

// R-STAGE-3 (the per-stage budget) and  ("429
// handling: worker backs off, doesn't exhaust attempts"): a notify run in
// which one row was throttled and another failed otherwise reports the
// failure that spends an attempt, whichever came last.
func TestCharged_RateLimitedNeverHidesAChargedFailure(t *testing.T) {
	throttled := retry.Transient(retry.RateLimited, errors.New("throttled"))
	upstream := retry.Transient(retry.Upstream5xx, errors.New("503"))
	for _, c := range []struct {
		name       string
		prev, next error
		want       error
	}{
		{"first failure", nil, throttled, throttled},
		{"throttled, then 5xx", throttled, upstream, upstream},
		{"5xx, then throttled", upstream, throttled, upstream},
		{"throttled twice", throttled, throttled, throttled},
	} {
		if got := charged(c.prev, c.next); got != c.want {
			t.Errorf("%s: charged = %v, want %v", c.name, got, c.want)
		}
	}
}
