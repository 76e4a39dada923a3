package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// Evidence is the in-memory evidence path, with store.Evidence's rules:
// the newest event time and the drain time only move forward.
type Evidence struct {
	mu   sync.Mutex
	sets map[string]*store.EvidenceState
	now  store.Clock
}

var _ store.EvidencePath = (*Evidence)(nil)

// NewEvidence returns an evidence path on which no event was recorded,
// with clock now (time.Now if nil).
func NewEvidence(now store.Clock) *Evidence {
	if now == nil {
		now = time.Now
	}
	return &Evidence{sets: map[string]*store.EvidenceState{}, now: now}
}

// ClaimProbe implements store.EvidencePath.
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

// Advance implements store.EvidencePath.
func (e *Evidence) Advance(_ context.Context, set string, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.state(set); st.Newest.Before(at) {
		st.Newest = at.UTC()
	}
	return nil
}

// Drain implements store.EvidencePath.
func (e *Evidence) Drain(_ context.Context, set string, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.state(set); st.Drained.Before(at) {
		st.Drained = at.UTC()
	}
	return nil
}

// Observe implements store.EvidencePath.
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

// State implements store.EvidencePath.
func (e *Evidence) State(_ context.Context, set string) (store.EvidenceState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return *e.state(set), nil
}

// Recipients keeps suppressions and unsubscribes in memory.
type Recipients struct {
	mu           sync.Mutex
	suppressed   map[string]string   // recipient id -> first reason
	unsubscribed map[string]bool     // recipient id -> left everything
	repositories map[string][]string // recipient id -> repositories left
}

// NewRecipients returns a set with no suppression and no unsubscribe.
func NewRecipients() *Recipients {
	return &Recipients{suppressed: map[string]string{}, unsubscribed: map[string]bool{}, repositories: map[string][]string{}}
}

// Unsubscribe records that the recipient left a repository, or every
// email (store.Recipients.Unsubscribe).
func (r *Recipients) Unsubscribe(_ context.Context, recipientID, repository string, all bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if all {
		r.unsubscribed[recipientID] = true
	} else if !slices.Contains(r.repositories[recipientID], repository) {
		r.repositories[recipientID] = append(r.repositories[recipientID], repository)
	}
	return nil
}

// Suppress records a suppression; the first reason is kept.
func (r *Recipients) Suppress(_ context.Context, recipientID, reason string, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.suppressed[recipientID]; !ok {
		r.suppressed[recipientID] = reason
	}
	return nil
}

// Standings is every recipient's standing.
func (r *Recipients) Standings(_ context.Context, ids []string) (map[string]delivery.Standing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]delivery.Standing, len(ids))
	for _, id := range ids {
		reason, ok := r.suppressed[id]
		out[id] = delivery.Standing{Suppressed: ok, Reason: reason, UnsubscribedAll: r.unsubscribed[id],
			Repositories: slices.Clone(r.repositories[id])}
	}
	return out, nil
}

// Suppressed reports a recipient's suppression and its reason.
func (r *Recipients) Suppressed(recipientID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.suppressed[recipientID]
	return reason, ok
}
