package retry

import (
	"fmt"
	"net/http"
)

// HTTPStatusError is the error a non-AWS HTTP client (GitHub, GitLab, an LLM
// API) returns for a response it did not accept. It carries only the status
// line and the Retry-After header, never the response body, so that it can
// be logged and dead-lettered without leaking content.
type HTTPStatusError struct {
	Status     int    // HTTP status code
	RetryAfter string // raw Retry-After header value, "" if absent
	Op         string // e.g. "github.GetPullRequest"
}

func (e *HTTPStatusError) Error() string {
	text := http.StatusText(e.Status)
	if text == "" {
		text = "status"
	}
	if e.Op == "" {
		return fmt.Sprintf("HTTP %d %s", e.Status, text)
	}
	return fmt.Sprintf("%s: HTTP %d %s", e.Op, e.Status, text)
}

// StatusClass maps an HTTP status to a failure class (R-STAGE-1):
//
//   - 408 → NetworkTimeout; 429 → RateLimited; 5xx → Upstream5xx
//   - 401, 403, 407 → AuthDenied
//   - 404, 410 → NotFound
//   - 409, 412 → Conflict (412 is HTTP's optimistic-lock failure)
//   - 423 → InFlight (the resource is locked by another holder)
//   - 400, 413, 414, 415, 422 → SchemaInvalid (the request must change)
//   - 451 → PolicyRejected (refused for legal/policy reasons)
//   - anything else, including 0 → Unknown
//
// Callers that see a Retry-After on a 403 should treat it as RateLimited;
// Classify does (GitHub signals secondary rate limits with 403 + Retry-After).
func StatusClass(status int) Class {
	switch status {
	case http.StatusRequestTimeout:
		return NetworkTimeout
	case http.StatusTooManyRequests:
		return RateLimited
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		return AuthDenied
	case http.StatusNotFound, http.StatusGone:
		return NotFound
	case http.StatusConflict, http.StatusPreconditionFailed:
		return Conflict
	case http.StatusLocked:
		return InFlight
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong,
		http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return SchemaInvalid
	case http.StatusUnavailableForLegalReasons:
		return PolicyRejected
	}
	if status >= 500 && status <= 599 {
		return Upstream5xx
	}
	return Unknown
}
