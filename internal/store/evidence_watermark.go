package store

import (
	"context"
	"time"
)

// EvidenceState is the stored state of a configuration set's evidence
// path.
type EvidenceState struct {
	// Newest is the newest SES event time recorded.
	Newest time.Time
	// Drained: every message that reached the feedback queue before it
	// has been processed.
	Drained time.Time
	// ProbeSentAt is when the last evidence probe was sent.
	ProbeSentAt time.Time
	// ClearSince is when the current run of clear readings of the feedback
	// queue began (zero: none), DirtySince when the current streak of
	// readings that were not clear began, ReadAt the last reading
	// (Observe).
	ClearSince, DirtySince, ReadAt time.Time
}

// Evidence is the evidence path's contract as feedback, the drain
// check, the notifier and the sweeper use it; dynamo.Evidence keeps it on
// DynamoDB, memstore.Evidence in memory, storetest.Evidence proves
// them alike.
type Evidence interface {
	Advance(ctx context.Context, set string, at time.Time) error
	Drain(ctx context.Context, set string, at time.Time) error
	State(ctx context.Context, set string) (EvidenceState, error)
	ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error)
	ForgetProbe(ctx context.Context, set string) error
	Observe(ctx context.Context, set string, at time.Time, r Reading, every time.Duration) (time.Time, error)
}

// Reading is what one reading of the feedback queue and its DLQ found.
type Reading int

const (
	// ReadingClear: nothing visible or delayed in the queue (messages may
	// be in flight), nothing in its DLQ.
	ReadingClear Reading = iota
	// ReadingVisible: a message visible or delayed in the queue; alone it
	// is tolerated, as it may be seconds old.
	ReadingVisible
	// ReadingDeadLettered: a message in the DLQ, which ends the run at
	// once: it stays there until someone redrives it.
	ReadingDeadLettered
)

// RunState is the run of clear readings as stored.
type RunState struct {
	ClearSince, DirtySince, ReadAt time.Time
}

// NextRun is the run once a reading made at at is recorded (Observe; the
// in-memory store applies it too).
func NextRun(st RunState, at time.Time, r Reading, every time.Duration) RunState {
	at = at.UTC()
	if !at.After(st.ReadAt) {
		// An older reading than the last recorded: it can only end the run.
		if r != ReadingClear {
			st.ClearSince = time.Time{}
		}
		return st
	}
	gap := !st.ReadAt.IsZero() && at.Sub(st.ReadAt) > 2*every
	switch r {
	case ReadingClear:
		if st.ClearSince.IsZero() || st.ReadAt.IsZero() || gap {
			st.ClearSince = at
		}
		st.DirtySince = time.Time{}
	default:
		if st.DirtySince.IsZero() || gap {
			st.DirtySince = at
		}
		if gap || r == ReadingDeadLettered || at.Sub(st.DirtySince) >= every {
			st.ClearSince = time.Time{}
		}
	}
	st.ReadAt = at
	return st
}
