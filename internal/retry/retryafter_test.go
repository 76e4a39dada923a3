package retry

import (
	"math"
	"net/http"
	"testing"
	"time"
)

// R-STAGE-1 rate-limit row: "Honor upstream Retry-After header when present;
// otherwise use backoff policy". Both RFC 9110 §10.2.3 forms are accepted.
func TestParseRetryAfter_Forms(t *testing.T) {
	now := time.Date(1994, 11, 6, 8, 48, 37, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 120 * time.Second, true},
		{" 5 ", 5 * time.Second, true},
		{"0", 0, true},
		{"Sun, 06 Nov 1994 08:49:37 GMT", time.Minute, true},  // IMF-fixdate
		{"Sunday, 06-Nov-94 08:49:37 GMT", time.Minute, true}, // obsolete RFC 850
		{"Sun Nov  6 08:49:37 1994", time.Minute, true},       // asctime
		{"Sun, 06 Nov 1994 08:00:00 GMT", 0, true},            // past: retry now
		{"99999999999999999999", math.MaxInt64, true},         // overflow saturates
		{"", 0, false},
		{"soon", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"Sun, 06 Nov 1994 25:00:00 GMT", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// R-STAGE-2: a Retry-After date is honoured but capped at 5 minutes.
func TestRetryAfter_DateCappedAtCeiling(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	header := now.Add(2 * time.Hour).Format(http.TimeFormat)
	c := ClassifyAt(&HTTPStatusError{Status: 503, RetryAfter: header}, now)
	if c.RetryAfter != 2*time.Hour {
		t.Fatalf("RetryAfter = %v, want 2h", c.RetryAfter)
	}
	if d := DefaultPolicy().Delay(1, c.RetryAfter, NewRand(1)); d != 5*time.Minute {
		t.Errorf("Delay = %v, want 5m", d)
	}
	// Garbage falls back to the backoff policy.
	c = ClassifyAt(&HTTPStatusError{Status: 429, RetryAfter: "later please"}, now)
	if c.RetryAfter != 0 || c.Class != RateLimited {
		t.Errorf("garbage Retry-After: got %v %s", c.RetryAfter, c.Class)
	}
}
