package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/store"
)

// Posts is the in-memory store.Posts: each method one atomic step, as
// each DynamoDB write is.
type Posts struct {
	mu   sync.Mutex
	rows map[string]channel.Row
	now  store.Clock
}

var _ store.Posts = (*Posts)(nil)

// NewPosts returns no post rows, with clock now (time.Now if nil).
func NewPosts(now store.Clock) *Posts {
	if now == nil {
		now = time.Now
	}
	return &Posts{rows: map[string]channel.Row{}, now: now}
}

func clonePost(r channel.Row) channel.Row {
	r.Body = slices.Clone(r.Body)
	r.Post.Findings = slices.Clone(r.Post.Findings)
	r.Post.Body = slices.Clone(r.Post.Body)
	return r
}

func postConflict(id string, r channel.Row) error {
	return fmt.Errorf("post %s is %s: %w", id, r.Status, store.ErrConflict)
}

// EnsurePost creates r unless a row has its id.
func (s *Posts) EnsurePost(_ context.Context, r channel.Row) (channel.Row, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.rows[r.ID]; ok {
		return clonePost(old), false, nil
	}
	now := s.now().UTC()
	r.Status, r.CreatedAt, r.UpdatedAt = channel.StatusPending, now, now
	s.rows[r.ID] = clonePost(r)
	return clonePost(r), true, nil
}

// GetPost reads a row.
func (s *Posts) GetPost(_ context.Context, id string) (channel.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return channel.Row{}, fmt.Errorf("post %s: %w", id, store.ErrNotFound)
	}
	return clonePost(r), nil
}

// ClaimPost takes a pending row, or one under a lapsed lease.
func (s *Posts) ClaimPost(_ context.Context, id, token string, lease time.Duration) (channel.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return channel.Row{}, fmt.Errorf("post %s: %w", id, store.ErrConflict)
	}
	now := s.now().UTC()
	if !r.Claimable(now) {
		return clonePost(r), postConflict(id, r)
	}
	r.Status, r.Attempts, r.LeaseUntil, r.ClaimToken, r.UpdatedAt = channel.StatusSending, r.Attempts+1, now.Add(lease), token, now
	s.rows[id] = r
	return clonePost(r), nil
}

func (s *Posts) held(id, token string) (channel.Row, error) {
	r, ok := s.rows[id]
	if !ok {
		return channel.Row{}, fmt.Errorf("post %s: %w", id, store.ErrConflict)
	}
	if r.Status != channel.StatusSending || r.ClaimToken != token {
		return clonePost(r), postConflict(id, r)
	}
	return r, nil
}

// MarkPostSent records the receipt under the claim.
func (s *Posts) MarkPostSent(_ context.Context, id, token string, receipt channel.Receipt) (channel.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, token)
	if err != nil {
		if r.Status == channel.StatusSent && r.Receipt == receipt {
			return r, nil // a retried mark whose first write applied, as dynamo.Posts reads it back
		}
		return r, err
	}
	now := s.now().UTC()
	r.Status, r.Receipt, r.SentAt, r.UpdatedAt = channel.StatusSent, receipt, now, now
	r.LeaseUntil, r.ClaimToken, r.LastErrorClass = time.Time{}, "", ""
	s.rows[id] = r
	return clonePost(r), nil
}

// ReleasePost returns a claimed row to pending.
func (s *Posts) ReleasePost(_ context.Context, id, token, errorClass string) (channel.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, token)
	if err != nil {
		return r, err
	}
	r.Status, r.LastErrorClass, r.UpdatedAt = channel.StatusPending, errorClass, s.now().UTC()
	r.LeaseUntil, r.ClaimToken = time.Time{}, ""
	s.rows[id] = r
	return clonePost(r), nil
}

// SettlePost settles a row that does not exist, is pending, or is held
// under token.
func (s *Posts) SettlePost(_ context.Context, in channel.Row, token, reason string) (channel.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	r, ok := s.rows[in.ID]
	switch {
	case !ok:
		r = channel.Row{ID: in.ID, CreatedAt: now}
	case r.Status == channel.StatusPending, token != "" && r.Status == channel.StatusSending && r.ClaimToken == token:
	default:
		return clonePost(r), postConflict(in.ID, r)
	}
	r.JobID, r.Channel, r.Phase = in.JobID, in.Channel, in.Phase
	r.Status, r.SettleReason, r.UpdatedAt = channel.StatusSettled, reason, now
	r.LeaseUntil, r.ClaimToken = time.Time{}, ""
	s.rows[in.ID] = r
	return clonePost(r), nil
}

// UnsettledPosts calls fn for each claimable row, by id.
func (s *Posts) UnsettledPosts(ctx context.Context, fn func(channel.Row) error) error {
	s.mu.Lock()
	now := s.now()
	var rows []channel.Row
	for _, r := range s.rows {
		if r.Claimable(now) {
			rows = append(rows, clonePost(r))
		}
	}
	s.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
