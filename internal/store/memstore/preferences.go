package memstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
)

// Preferences keeps suppressions and preference records in memory: the
// store.Preferences contract (storetest.Preferences) without a table.
type Preferences struct {
	mu         sync.Mutex
	suppressed map[string]string            // recipient id -> first reason
	prefs      map[string]prefs.Preferences // recipient id -> record as stored
	now        store.Clock
}

var _ store.Preferences = (*Preferences)(nil)

// NewPreferences returns a set with no suppression and no preference.
func NewPreferences() *Preferences {
	return &Preferences{suppressed: map[string]string{}, prefs: map[string]prefs.Preferences{}, now: time.Now}
}

// Suppress records a suppression; the first reason is kept.
func (r *Preferences) Suppress(_ context.Context, recipientID, reason string, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.suppressed[recipientID]; !ok {
		r.suppressed[recipientID] = reason
	}
	return nil
}

// record is the stored record of id, or the default (r.mu held).
func (r *Preferences) record(id string) prefs.Preferences {
	if p, ok := r.prefs[id]; ok {
		p.Muted = slices.Clone(p.Muted)
		return p
	}
	return prefs.Default().Normalized()
}

// Preferences implements store.Preferences.
func (r *Preferences) Preferences(_ context.Context, recipientID string) (prefs.Preferences, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.record(recipientID), nil
}

// SavePreferences implements store.Preferences.
func (r *Preferences) SavePreferences(_ context.Context, recipientID string, p prefs.Preferences) (prefs.Preferences, error) {
	p = p.Normalized()
	if err := p.Validate(); err != nil {
		return prefs.Preferences{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.record(recipientID); cur.Rev != p.Rev {
		return prefs.Preferences{}, fmt.Errorf("save preferences at rev %d: %w", p.Rev, store.ErrConflict)
	}
	p.Rev, p.UpdatedAt = p.Rev+1, r.now().UTC()
	p.Muted = slices.Clone(p.Muted)
	r.prefs[recipientID] = p
	return p, nil
}

// Mute implements store.Preferences.
func (r *Preferences) Mute(_ context.Context, recipientID, repository string) error {
	if repository == "" || len(repository) > prefs.MaxRepository {
		return fmt.Errorf("mute: a repository of %d bytes, want 1 to %d", len(repository), prefs.MaxRepository)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.record(recipientID)
	switch {
	case p.Mutes(repository):
	case len(p.Muted) >= prefs.MaxMuted:
		p.UnsubscribedAll = true
	default:
		p.Muted = append(p.Muted, repository)
	}
	p.Rev, p.UpdatedAt = p.Rev+1, r.now().UTC()
	r.prefs[recipientID] = p.Normalized()
	return nil
}

// UnsubscribeAll implements store.Preferences.
func (r *Preferences) UnsubscribeAll(_ context.Context, recipientID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.record(recipientID)
	p.UnsubscribedAll = true
	p.Rev, p.UpdatedAt = p.Rev+1, r.now().UTC()
	r.prefs[recipientID] = p
	return nil
}

// Standings implements store.Preferences: every recipient's
// suppression and preference record.
func (r *Preferences) Standings(_ context.Context, ids []string) (map[string]delivery.Standing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]delivery.Standing, len(ids))
	for _, id := range ids {
		reason, ok := r.suppressed[id]
		out[id] = delivery.Standing{Suppressed: ok, Reason: reason, Preferences: r.record(id)}
	}
	return out, nil
}

// NewPreferencesAt is NewPreferences with the clock records are written at
// (their UpdatedAt): a world whose runs must be functions of their
// choices (internal/explore) gives its own.
func NewPreferencesAt(now store.Clock) *Preferences {
	r := NewPreferences()
	r.now = now
	return r
}
