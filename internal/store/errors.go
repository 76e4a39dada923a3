package store

import (
	"errors"
	"time"
)

// ErrNotFound is returned when an item does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a conditional write lost to another writer:
// the row is no longer in the state the caller read.
var ErrConflict = errors.New("conditional write conflict")

// Clock returns the current time; tests pass a fixed one.
type Clock func() time.Time
