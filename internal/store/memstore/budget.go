package memstore

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// Budgets is the in-memory store.Budgets: each window's set of job ids.
type Budgets struct {
	mu      sync.Mutex
	windows map[string][]job.ID
}

var _ store.Budgets = (*Budgets)(nil)

// NewBudgets returns empty budgets.
func NewBudgets() *Budgets { return &Budgets{windows: map[string][]job.ID{}} }

// Spend implements store.Budgets: every window or none, a job once.
func (s *Budgets) Spend(_ context.Context, sp store.Spend) (store.SpendResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for _, w := range sp.Windows {
		if w.Limit <= 0 || w.Every <= 0 {
			continue
		}
		k := w.Name + "#" + w.Key + "#" + strconv.FormatInt(store.WindowStart(w, sp.At).Unix(), 10)
		ids := s.windows[k]
		if !slices.Contains(ids, sp.JobID) && len(ids) >= w.Limit {
			return store.SpendResult{Refused: w.Name, Used: len(ids), Limit: w.Limit}, nil
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		if !slices.Contains(s.windows[k], sp.JobID) {
			s.windows[k] = append(s.windows[k], sp.JobID)
		}
	}
	return store.SpendResult{OK: true}, nil
}

// Replays is the in-memory store.Replays.
type Replays struct {
	mu         sync.Mutex
	deliveries map[string]claim
	refreshes  map[job.ID]time.Time // due
	now        store.Clock
}

type claim struct {
	at, expires time.Time
	handled     bool
}

var _ store.Replays = (*Replays)(nil)

// NewReplays returns empty replay records with clock now (time.Now if nil).
func NewReplays(now store.Clock) *Replays {
	if now == nil {
		now = time.Now
	}
	return &Replays{deliveries: map[string]claim{}, refreshes: map[job.ID]time.Time{}, now: now}
}

// replayKey is a store.ReplayKey as a map key: the kinds apart, as the
// table's prefixes keep them.
func replayKey(k store.ReplayKey) string {
	kind := "delivery#"
	if k.Body {
		kind = "body#"
	}
	return kind + k.Source + "#" + k.ID
}

// ClaimDelivery implements store.Replays.
func (s *Replays) ClaimDelivery(_ context.Context, key store.ReplayKey, window, lease time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k := replayKey(key)
	if c, ok := s.deliveries[k]; ok && !c.expires.Before(now.Truncate(time.Second)) && (c.handled || !c.at.Before(now.Add(-lease))) {
		return false, nil
	}
	s.deliveries[k] = claim{at: now, expires: now.Add(window)}
	return true, nil
}

// CompleteDelivery implements store.Replays.
func (s *Replays) CompleteDelivery(_ context.Context, key store.ReplayKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := replayKey(key)
	if c, ok := s.deliveries[k]; ok {
		c.handled = true
		s.deliveries[k] = c
	}
	return nil
}

// ReleaseDelivery implements store.Replays.
func (s *Replays) ReleaseDelivery(_ context.Context, key store.ReplayKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deliveries, replayKey(key))
	return nil
}

// ScheduleRefresh implements store.Replays.
func (s *Replays) ScheduleRefresh(_ context.Context, id job.ID, window time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if due, ok := s.refreshes[id]; ok && due.After(now) {
		return false, nil
	}
	s.refreshes[id] = now.Add(window)
	return true, nil
}

// CancelRefresh implements store.Replays.
func (s *Replays) CancelRefresh(_ context.Context, id job.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refreshes, id)
	return nil
}
