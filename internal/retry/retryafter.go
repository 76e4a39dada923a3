package retry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter parses an HTTP Retry-After value (RFC 9110 §10.2.3): either
// delta-seconds or an HTTP-date in any of the three formats HTTP/1.1
// recipients must accept (IMF-fixdate, RFC 850, asctime).
//
// It returns ok=false for an empty, negative or unparseable value, so that a
// garbled header falls back to the backoff policy instead of stalling the
// stage. A date in the past means "now": 0, true. The result is not capped
// here; Policy.Delay applies the operational ceiling (R-STAGE-2).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > math.MaxInt64/uint64(time.Second) {
			// Overflowing delta-seconds are still a valid, absurdly long
			// delay; the ceiling will bound it.
			return math.MaxInt64, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
