package retry

// Class is a stable failure-class identifier. Its string value is what lands
// in dead-letter envelopes as error_class and in metrics, so values must never
// be renamed once shipped (R-STAGE-4).
type Class string

// Failure classes. Each maps to one row of the R-STAGE-1 table; InFlight,
// AwaitingEvidence and Unknown are additions explained on the constants.
const (
	// NetworkTimeout: DNS or socket timeout, an expired context (R-STAGE-1
	// "Network transient").
	NetworkTimeout Class = "NETWORK_TIMEOUT"
	// NetworkError: TCP reset, refused connection, truncated response
	// (R-STAGE-1 "Network transient").
	NetworkError Class = "NETWORK_ERROR"
	// RateLimited: HTTP 429, provider throttling, temporary quota windows
	// (R-STAGE-1 "Rate limiting / quota throttling").
	RateLimited Class = "RATE_LIMITED"
	// QuotaExhausted: a provider quota counted over a window far longer
	// than any retry is spent — SES's daily sending quota, a rolling 24
	// hours ("Daily message quota exceeded"). Like RateLimited it says
	// nothing about the message, but it is not over in a second: the stage
	// runner pauses the work (R-RATE-3), deferring it for the quota's
	// recheck interval without spending the attempt budget and without
	// the cap on deferrals, so a spent quota holds the work and never
	// dead-letters it.
	QuotaExhausted Class = "QUOTA_EXHAUSTED"
	// Upstream5xx: upstream internal errors, 5xx from a provider (R-STAGE-1
	// "Upstream internal service errors").
	Upstream5xx Class = "UPSTREAM_5XX"
	// Conflict: optimistic-lock or duplicate-write race (R-STAGE-1 "Idempotency or
	// optimistic-lock conflicts"). Retryable only because every stage
	// operation is idempotent; a caller with a non-idempotent operation must
	// use Permanent(Conflict, err).
	Conflict Class = "CONFLICT"
	// InFlight: another worker holds the lease on this unit of work. Not a
	// R-STAGE-1 row of its own; it is the benign form of a conflict and is retried
	// so that the lease holder can finish (or its lease can expire).
	InFlight Class = "IN_FLIGHT"
	// AwaitingEvidence: a send whose answer was lost (a timeout, a dropped
	// connection, a 5xx after the provider may have done the work) is held
	// until provider evidence settles it: the message may or may not have
	// gone out, and only the evidence path can tell. Like RateLimited it
	// says nothing about the message, so the stage runner defers it without
	// spending the attempt budget.
	AwaitingEvidence Class = "AWAITING_EVIDENCE"
	// SchemaInvalid: missing fields, malformed JSON, schema mismatch (R-STAGE-1
	// "Validation and schema errors").
	SchemaInvalid Class = "SCHEMA_INVALID"
	// AuthDenied: invalid key, expired token, permission denied (R-STAGE-1
	// "Authentication/authorization").
	AuthDenied Class = "AUTH_DENIED"
	// NotFound: 404 for an immutable input, deleted destination (R-STAGE-1 "Not
	// found / permanent resource state").
	NotFound Class = "NOT_FOUND"
	// PolicyRejected: moderation block, explicit deny, provider refusing the
	// message or the account (R-STAGE-1 "Content policy / hard business-rule
	// reject").
	PolicyRejected Class = "POLICY_REJECTED"
	// RuntimeBug: panic, illegal state, invariant violation, bad deploy
	// configuration (R-STAGE-1 "Configuration/runtime bug").
	RuntimeBug Class = "RUNTIME_BUG"
	// Unknown: nothing recognised the error. See Class.Retryable for why it
	// is retried.
	Unknown Class = "UNKNOWN"
)

// Retryable reports whether R-STAGE-1 allows automatic retries for the class.
//
// Unknown (and any unrecognised value, including the empty Class) is
// retryable. An unclassified error is far more often a new transient failure
// mode than a poison message, and the cost of being wrong is bounded: the
// per-stage budget (R-STAGE-3) allows at most four more attempts, after which the
// item is dead-lettered as UNKNOWN, which tells the operator to add a
// classification. Treating Unknown as permanent would instead dead-letter
// every unforeseen blip on its first occurrence. Panics never reach Unknown:
// they are RuntimeBug.
func (c Class) Retryable() bool {
	switch c {
	case NetworkTimeout, NetworkError, RateLimited, QuotaExhausted, Upstream5xx, Conflict, InFlight, AwaitingEvidence:
		return true
	case SchemaInvalid, AuthDenied, NotFound, PolicyRejected, RuntimeBug:
		return false
	default:
		return true
	}
}

// String returns the stable identifier.
func (c Class) String() string { return string(c) }
