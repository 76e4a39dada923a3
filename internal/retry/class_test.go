package retry

import "testing"

// R-STAGE-1: "All failures MUST be classified as either retryable (automatic
// retries allowed) or non-retryable (fail immediately to dead-letter queue)."
func TestClass_RetryableMatchesTable(t *testing.T) {
	tests := []struct {
		class Class
		want  bool
	}{
		{NetworkTimeout, true}, // Network transient: Retryable
		{NetworkError, true},   // Network transient: Retryable
		{RateLimited, true},    // Rate limiting / quota throttling: Retryable
		{QuotaExhausted, true}, // a spent daily quota: paused, never dead-lettered (R-RATE-3)
		{Upstream5xx, true},    // Upstream internal service errors: Retryable
		{Conflict, true},       // Idempotency or optimistic-lock conflicts: Retryable
		{InFlight, true},       // lease held elsewhere: a benign conflict
		{SchemaInvalid, false}, // Validation and schema errors: Non-retryable
		{AuthDenied, false},    // Authentication/authorization: Non-retryable
		{NotFound, false},      // Not found / permanent resource state: Non-retryable
		{PolicyRejected, false},
		{RuntimeBug, false}, // Configuration/runtime bug: Non-retryable
		{Unknown, true},     // bounded by the R-STAGE-3 budget; see Class.Retryable
		{Class(""), true},
		{Class("SOMETHING_NEW"), true},
	}
	for _, tt := range tests {
		if got := tt.class.Retryable(); got != tt.want {
			t.Errorf("%q.Retryable() = %v, want %v", tt.class, got, tt.want)
		}
	}
}

// R-STAGE-4: error_class is a "stable classification identifier (for example
// NETWORK_TIMEOUT, AUTH_DENIED, SCHEMA_INVALID)".
func TestClass_StableIdentifiers(t *testing.T) {
	want := map[Class]string{
		NetworkTimeout: "NETWORK_TIMEOUT", NetworkError: "NETWORK_ERROR",
		RateLimited: "RATE_LIMITED", QuotaExhausted: "QUOTA_EXHAUSTED", Upstream5xx: "UPSTREAM_5XX",
		Conflict: "CONFLICT", InFlight: "IN_FLIGHT",
		SchemaInvalid: "SCHEMA_INVALID", AuthDenied: "AUTH_DENIED",
		NotFound: "NOT_FOUND", PolicyRejected: "POLICY_REJECTED",
		RuntimeBug: "RUNTIME_BUG", Unknown: "UNKNOWN",
	}
	for c, s := range want {
		if c.String() != s {
			t.Errorf("class %q, want %q", c, s)
		}
	}
}
