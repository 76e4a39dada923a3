package memstore

import (
	"context"
	"fmt"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// headState is one changelist's head commits and version counter, made
// on first use.
type headState struct {
	counter store.CounterState
	commits map[string]store.HeadRecord
}

var _ store.Heads = (*Jobs)(nil)

func (s *Jobs) changelistHeads(source, changelistID string) *headState {
	if s.commits == nil {
		s.commits = map[string]*headState{}
	}
	k := job.ChangelistKey(source, changelistID)
	h := s.commits[k]
	if h == nil {
		h = &headState{commits: map[string]store.HeadRecord{}}
		s.commits[k] = h
	}
	return h
}

// record is a head's record, or nil.
func (h *headState) record(sha string) *store.HeadRecord {
	if r, ok := h.commits[sha]; ok {
		return &r
	}
	return nil
}

// PlaceHead implements store.Heads with store.DecidePlacement, as
// dynamo.Jobs does; under the lock every placement reads the state
// the one before it left, as the driver's conditional draw makes it.
func (s *Jobs) PlaceHead(_ context.Context, ev store.HeadEvent) (store.Placement, error) {
	if err := store.CheckHeadEvent(ev); err != nil {
		return store.Placement{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.changelistHeads(ev.Source, ev.ChangelistID)
	self := h.record(ev.HeadSHA)
	if self != nil && self.Version > 0 {
		return store.Placement{Version: self.Version, Pending: self.Order == store.HeadPending, PlacedAt: self.PlacedAt}, nil
	}
	var before *store.HeadRecord
	if ev.BeforeSHA != "" {
		before = h.record(ev.BeforeSHA)
	}
	d := store.DecidePlacement(ev, self, h.counter, before)
	if d.Stale {
		return store.Placement{Stale: true, Current: d.Current}, nil
	}
	v, now := h.counter.Last+1, s.now().UTC()
	h.counter = store.CounterState{Exists: true, Last: v, Head: ev.HeadSHA}
	h.commits[ev.HeadSHA] = store.HeadRecord{SHA: ev.HeadSHA, Version: v, Order: d.Order, After: d.After, PlacedAt: now}
	if d.Mark != "" {
		h.commits[d.Mark] = store.HeadRecord{SHA: d.Mark, Order: store.HeadBehind, BehindVersion: v, PlacedAt: now}
	}
	return store.Placement{Version: v, Pending: d.Order == store.HeadPending, PlacedAt: now}, nil
}

// AssignVersion is dynamo.Jobs.AssignVersion.
func (s *Jobs) AssignVersion(ctx context.Context, source, changelistID, headSHA string) (int, error) {
	return store.AssignVersionOf(ctx, s, source, changelistID, headSHA)
}

// Head implements store.Heads.
func (s *Jobs) Head(_ context.Context, source, changelistID, sha string) (store.HeadRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.changelistHeads(source, changelistID).record(sha); r != nil {
		return *r, nil
	}
	return store.HeadRecord{}, fmt.Errorf("head commit %s of %s: %w", sha, changelistID, store.ErrNotFound)
}

// SettleHead implements store.Heads: from pending only.
func (s *Jobs) SettleHead(_ context.Context, source, changelistID, sha string, order store.HeadOrder) (store.HeadRecord, error) {
	if order != store.HeadOrdered && order != store.HeadBehind {
		return store.HeadRecord{}, fmt.Errorf("settle head %s: %q is not a verdict", sha, order)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.changelistHeads(source, changelistID)
	r := h.record(sha)
	if r == nil {
		return store.HeadRecord{}, fmt.Errorf("head commit %s of %s: %w", sha, changelistID, store.ErrNotFound)
	}
	if r.Order == store.HeadPending {
		r.Order = order
		h.commits[sha] = *r
	}
	return *r, nil
}
