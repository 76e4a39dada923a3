// Package webhook turns a signed HTTP request from a code review system into a
// validated Change. One adapter per source verifies the signature, checks the
// idempotency key and parses the body; errors say which field is wrong so the
// caller can fix it (HTTP 4xx), and nothing is persisted for a bad request.
package webhook

import (
	"errors"
	"fmt"
	"strings"
)

// Change is a validated review request, whatever its source.
type Change struct {
	Source         string
	IdempotencyKey string
	ChangelistID   string
	ReviewVersion  int
	Title          string
	// Description is the pull request's (merge request's, change's)
	// description, cut to MaxDescription: untrusted text for the model.
	Description string
	URL         string
	Author      string
	Recipients  []string // normalized, de-duplicated, in first-seen order
	Diff        string   // inline unified diff, or empty when DiffURL is set
	DiffURL     string
	// Quiet: a generic caller asked for the quiet rules (R-QUIET-1..3)
	// on this version, as a code host's push gets them; without it a
	// generic version is explicit and mailed to everyone (R-RERUN-2).
	// The code hosts' adapters leave it unset: intake makes their
	// versions quiet whatever it says.
	Quiet bool
	// Repository is the repository a generic caller named (optional,
	// validated): shown on the job and in the email, as a code host's is
	// in its changelist id. The code hosts' adapters leave it empty.
	Repository string
}

// Request is the transport-neutral view of an HTTP request.
type Request struct {
	// Header returns the first value of a header, case-insensitively.
	Header func(name string) string
	Body   []byte
}

// FieldError is a problem with one named field of the request (HTTP 400).
type FieldError struct {
	Field   string // JSON field name, or a header name such as "Idempotency-Key"
	Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// AuthError is a missing or wrong signature (HTTP 401). Its message never
// includes the expected signature or the secret.
type AuthError struct{ Reason string }

func (e *AuthError) Error() string { return "unauthorized: " + e.Reason }

// TooLargeError is a body over the size limit (HTTP 413).
type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("request body larger than %d bytes", e.Limit)
}

// Status maps a webhook error to its HTTP status: 401, 413 or 400, and 202
// for a *SkipError: an authentic request that needs no review is
// acknowledged (the sender must not retry it or disable the hook), though
// no job is created.
func Status(err error) int {
	var ae *AuthError
	var tl *TooLargeError
	var se *SkipError
	switch {
	case errors.As(err, &ae):
		return 401
	case errors.As(err, &tl):
		return 413
	case errors.As(err, &se):
		return 202
	}
	return 400
}

// MaxIdempotencyKey is the longest accepted Idempotency-Key.
const MaxIdempotencyKey = 128

// checkIdempotencyKey enforces 1–128 printable ASCII characters (0x20–0x7E).
func checkIdempotencyKey(k string) error {
	if k == "" {
		return &FieldError{Field: "Idempotency-Key", Message: "header is required"}
	}
	if len(k) > MaxIdempotencyKey {
		return &FieldError{Field: "Idempotency-Key", Message: fmt.Sprintf("must be at most %d characters", MaxIdempotencyKey)}
	}
	if strings.IndexFunc(k, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		return &FieldError{Field: "Idempotency-Key", Message: "must be printable ASCII"}
	}
	return nil
}
