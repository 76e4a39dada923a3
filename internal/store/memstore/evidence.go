package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/store"
)

// Evidence is the in-memory evidence path, with store.Evidence's rules:
// the newest event time and the drain time only move forward.
type Evidence struct {
	mu   sync.Mutex
	sets map[string]*store.EvidenceState
	now  store.Clock
}

var _ store.Evidence = (*Evidence)(nil)

// NewEvidence returns an evidence path on which no event was recorded,
// with clock now (time.Now if nil).
func NewEvidence(now store.Clock) *Evidence {
	if now == nil {
		now = time.Now
	}
	return &Evidence{sets: map[string]*store.EvidenceState{}, now: now}
}

// ClaimProbe implements store.Evidence.
func (e *Evidence) ClaimProbe(_ context.Context, set string, need time.Time, every time.Duration) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now().UTC()
	st := e.state(set)
	if !(st.Newest.IsZero() || st.Newest.Before(need)) {
		return false, nil
	}
	if !(st.ProbeSentAt.IsZero() || st.ProbeSentAt.Before(need) || st.ProbeSentAt.Before(now.Add(-every))) {
		return false, nil
	}
	st.ProbeSentAt = now
	return true, nil
}

func (e *Evidence) state(set string) *store.EvidenceState {
	st, ok := e.sets[set]
	if !ok {
		st = &store.EvidenceState{}
		e.sets[set] = st
	}
	return st
}

// Advance implements store.Evidence.
func (e *Evidence) Advance(_ context.Context, set string, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.state(set); st.Newest.Before(at) {
		st.Newest = at.UTC()
	}
	return nil
}

// Drain implements store.Evidence.
func (e *Evidence) Drain(_ context.Context, set string, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.state(set); st.Drained.Before(at) {
		st.Drained = at.UTC()
	}
	return nil
}

// Observe implements store.Evidence.
func (e *Evidence) Observe(_ context.Context, set string, at time.Time, r store.Reading, every time.Duration) (time.Time, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.state(set)
	next := store.NextRun(store.RunState{ClearSince: st.ClearSince, DirtySince: st.DirtySince, ReadAt: st.ReadAt}, at, r, every)
	st.ClearSince, st.DirtySince, st.ReadAt = next.ClearSince, next.DirtySince, next.ReadAt
	return st.ClearSince, nil
}

// ForgetProbe clears the record of the last probe.
func (e *Evidence) ForgetProbe(_ context.Context, set string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state(set).ProbeSentAt = time.Time{}
	return nil
}

// State implements store.Evidence.
func (e *Evidence) State(_ context.Context, set string) (store.EvidenceState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return *e.state(set), nil
}

// Suppressed reports a recipient's suppression and its reason.
func (r *Preferences) Suppressed(recipientID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.suppressed[recipientID]
	return reason, ok
}
