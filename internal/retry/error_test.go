package retry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// R-STAGE-4: "last_stack: most recent stack trace or error chain from the failing
// stage" — the classified error keeps the whole chain and names the
// operation and upstream status.
func TestError_FormatAndUnwrap(t *testing.T) {
	cause := errors.New("connection reset")
	err := WithOp(&HTTPStatusError{Status: 502}, "github.GetDiff")
	c := Classify(err)
	if c.Op != "github.GetDiff" || c.Class != Upstream5xx || c.Status != 502 {
		t.Errorf("got %+v", c)
	}
	if got, want := c.Error(), "github.GetDiff: UPSTREAM_5XX (HTTP 502): HTTP 502 Bad Gateway"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e := Transient(NetworkError, cause)
	if !errors.Is(e, cause) || !strings.Contains(e.Error(), "NETWORK_ERROR: connection reset") {
		t.Errorf("Transient: %v", e)
	}
	if WithRetryAfter(nil, time.Second) != nil || WithOp(nil, "x") != nil {
		t.Error("nil in must give nil out")
	}
	var nilErr *Error
	if nilErr.Retryable() {
		t.Error("nil *Error is retryable")
	}
	// WithRetryAfter must not mutate a shared *Error.
	orig := Permanent(NotFound, cause).(*Error)
	_ = WithRetryAfter(orig, time.Minute)
	if orig.RetryAfter != 0 {
		t.Error("WithRetryAfter mutated its argument")
	}
}

// R-STAGE-1 "Not found": "Retry should not be attempted unless metadata
// changes" — Transient is how a caller says it has (read-after-write 404);
// the R-STAGE-3 budget still bounds the retries.
func TestTransient_OverridesClass(t *testing.T) {
	c := Classify(Transient(NotFound, errors.New("object not visible yet")))
	if c.Class != NotFound || !c.Retryable() {
		t.Errorf("got %s retryable=%v", c.Class, c.Retryable())
	}
}
