package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

var _ store.Digests = (*Deliveries)(nil)

// SettleDigested implements store.Digests.
func (s *Deliveries) SettleDigested(ctx context.Context, id string, d delivery.Row) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, func(r delivery.Row) bool { return r.Status.Claimable() && neverSent(r) }, func(r *delivery.Row) {
		r.Status, r.Digest, r.Period, r.SkipReason, r.UpdatedAt = delivery.StatusDigested, d.ID, d.Period, delivery.DigestReason(d.Period), now
	})
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.Status == delivery.StatusDigested && r.Digest == d.ID })
}

// MoveDigested implements store.Digests.
func (s *Deliveries) MoveDigested(ctx context.Context, id, from string, to delivery.Row) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, func(r delivery.Row) bool { return r.Status == delivery.StatusDigested && r.Digest == from }, func(r *delivery.Row) {
		r.Digest, r.Period, r.SkipReason, r.UpdatedAt = to.ID, to.Period, delivery.DigestReason(to.Period), now
	})
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.Status == delivery.StatusDigested && r.Digest == to.ID })
}

// AddToDigest implements store.Digests.
func (s *Deliveries) AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error) {
	now := s.clock()
	s.mu.Lock()
	r, ok := s.rows[d.ID]
	switch {
	case !ok:
		r = delivery.Row{ID: d.ID, Recipient: delivery.NormalizeRecipient(d.Recipient), Period: d.Period, DueAt: d.DueAt.UTC(),
			Status: delivery.StatusOpen, CreatedAt: now, UpdatedAt: now, Entries: []string{entry}}
	case r.Status == delivery.StatusOpen && (len(r.Entries) < max || r.HasEntry(entry)):
		if !r.HasEntry(entry) {
			r.Entries = append(r.Entries, entry)
			slices.Sort(r.Entries) // a set: DynamoDB keeps no order
		}
		r.UpdatedAt = now
	default:
		s.mu.Unlock()
		return s.ours(ctx, d.ID, delivery.Row{}, conflict(d.ID), func(r delivery.Row) bool { return r.HasEntry(entry) })
	}
	s.rows[d.ID] = r
	s.mu.Unlock()
	return clone(r), nil
}

// CloseDigest implements store.Digests.
func (s *Deliveries) CloseDigest(ctx context.Context, id string, entries int, c store.DigestClose) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, func(r delivery.Row) bool { return r.Status == delivery.StatusOpen && len(r.Entries) == entries }, func(r *delivery.Row) {
		r.Status, r.UpdatedAt = c.Status, now
		if c.Status == delivery.StatusPending {
			r.Message = c.Message
		} else {
			r.SkipReason = c.Reason
		}
	})
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		if r.Status == delivery.StatusPending {
			return c.Status == delivery.StatusPending && r.Message.ContentSHA256 == c.Message.ContentSHA256
		}
		return r.Status == c.Status && r.SkipReason == c.Reason
	})
}

// DueDigests implements store.Digests. A digest is in the live index's
// digests partition exactly while it awaits its close or its first claim
// (delivery.Row.AwaitsClose), so the rows are picked by that.
func (s *Deliveries) DueDigests(_ context.Context, dueBy time.Time, fn func(delivery.Row) error) error {
	s.mu.Lock()
	var rows []delivery.Row
	for _, r := range s.rows {
		if due, ok := delivery.DigestDue(r.ID); ok && !due.After(dueBy) && r.AwaitsClose() {
			rows = append(rows, clone(r))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(rows, func(a, b delivery.Row) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
