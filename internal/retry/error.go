package retry

import (
	"fmt"
	"strings"
	"time"
)

// Error is a classified failure. It wraps the original error, which is never
// dropped: errors.Is and errors.As see through an *Error to whatever the
// upstream client returned.
//
// The zero Class is treated as Unknown.
type Error struct {
	Class      Class
	Status     int           // upstream HTTP status, 0 if none
	RetryAfter time.Duration // upstream Retry-After, 0 if none
	Op         string        // operation that failed, e.g. "ses.SendEmail"
	Err        error         // the original error

	// override forces retryability regardless of Class; set only by
	// Transient and Permanent.
	override override
	// ownText is true when Err's message already contains this Error's text
	// (Classify found an *Error deeper in the chain and re-rooted it at the
	// outermost error), so Error() must not repeat it.
	ownText bool
}

type override uint8

const (
	byClass override = iota
	forceRetry
	forceStop
)

// Transient returns err classified as class and always retryable, whatever
// R-STAGE-1 says about the class. It exists for the cases where the caller knows
// more than the table, e.g. a 404 right after a write on an eventually
// consistent store. The attempt budget (R-STAGE-3) still bounds the retries.
func Transient(class Class, err error) error {
	return &Error{Class: class, Err: err, override: forceRetry}
}

// Permanent returns err classified as class and never retryable. R-STAGE-2:
// a failure reclassified as non-retryable stops retries immediately. Use it,
// for example, for Conflict on an operation that is not idempotent (R-STAGE-1
// allows retrying conflicts only for idempotent operations).
func Permanent(class Class, err error) error {
	return &Error{Class: class, Err: err, override: forceStop}
}

// WithRetryAfter classifies err and records the upstream Retry-After hint,
// which Policy.Delay honours (R-STAGE-2). It returns nil for a nil err so
// that it is safe on return paths.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	c := *Classify(err)
	c.RetryAfter = d
	return &c
}

// WithOp classifies err and names the operation that failed, for the
// dead-letter context. It returns nil for a nil err.
func WithOp(err error, op string) error {
	if err == nil {
		return nil
	}
	c := *Classify(err)
	c.Op = op
	return &c
}

// Retryable reports whether the failure may be retried (R-STAGE-1), honouring a
// Transient or Permanent override. A nil *Error is not retryable: there is
// nothing to retry.
func (e *Error) Retryable() bool {
	if e == nil {
		return false
	}
	switch e.override {
	case forceRetry:
		return true
	case forceStop:
		return false
	default:
		return e.class().Retryable()
	}
}

func (e *Error) class() Class {
	if e.Class == "" {
		return Unknown
	}
	return e.Class
}

// Error formats as "op: CLASS (HTTP status): original message".
func (e *Error) Error() string {
	if e.ownText && e.Err != nil {
		return e.Err.Error()
	}
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(string(e.class()))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the original error.
func (e *Error) Unwrap() error { return e.Err }
