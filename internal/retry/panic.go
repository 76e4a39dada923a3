package retry

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a recovered panic. Classify maps it to RuntimeBug, which is
// never retried: a nil dereference or a violated invariant will panic again
// on every attempt, so retrying only burns the budget and delays the page
// (R-STAGE-1 "Configuration/runtime bug").
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // goroutine stack captured during recovery
}

// NewPanicError wraps a recovered panic value and captures the current
// stack. Call it from the deferred function that recovered, so the stack
// still contains the panicking frames.
func NewPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Recover converts a panic into a *PanicError stored in *errp. It must be
// deferred directly (defer retry.Recover(&err)) because recover only works in
// the deferred call itself. It does nothing when there is no panic.
func Recover(errp *error) {
	if v := recover(); v != nil {
		*errp = NewPanicError(v)
	}
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap exposes the panic value when it is itself an error (for example a
// runtime.Error), so errors.Is and errors.As keep working.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
