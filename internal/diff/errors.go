package diff

import (
	"errors"
	"fmt"
)

// MaxLineBytes is the longest line, in bytes and without its terminator, the
// parser accepts. Real source lines are far shorter; the cap bounds the
// memory a hostile or corrupt payload can make one line cost.
const MaxLineBytes = 1 << 20

// ErrMalformed is wrapped by every error caused by the content of the input
// (as opposed to an I/O failure of the reader), so callers can tell "this
// diff is bad, retrying will not help" apart with errors.Is.
var ErrMalformed = errors.New("diff: malformed input")

// ErrLineTooLong is wrapped when a line exceeds MaxLineBytes. It wraps
// ErrMalformed because an over-long line is a property of the input.
var ErrLineTooLong = fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, MaxLineBytes)

// ParseError locates a problem in the input. Its message names the line
// number and the rule that was broken but never quotes the input, because
// diffs can contain credentials and errors end up in logs.
type ParseError struct {
	Line   int    // 1-based line number in the input
	Reason string // what was wrong, in words
	Err    error  // ErrMalformed or ErrLineTooLong
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%v at line %d: %s", e.Err, e.Line, e.Reason)
}

// Unwrap exposes the sentinel so errors.Is(err, ErrMalformed) works.
func (e *ParseError) Unwrap() error { return e.Err }
