// Package memstore keeps the store's contracts in memory (store.Deliveries,
// store.Jobs, ...), as the DynamoDB drivers keep them: the same conditions,
// the same transitions, the same errors. The protocols' unit tests run on it with
// no stack; the conformance suite (storetest) proves the two alike, on
// every run of make test (R-STORE-1).
//
// Why not a mock: a mock states what the test expects the store to do;
// this states what the store does, once, checked against the real one.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// Deliveries is the in-memory store.Deliveries. Safe for concurrent use: each method
// is one atomic step, as each DynamoDB write is.
type Deliveries struct {
	mu   sync.Mutex
	rows map[string]delivery.Row
	now  store.Clock
}

var _ store.Deliveries = (*Deliveries)(nil)

// NewDeliveries returns an empty outbox with clock now (time.Now if nil).
func NewDeliveries(now store.Clock) *Deliveries {
	if now == nil {
		now = time.Now
	}
	return &Deliveries{rows: map[string]delivery.Row{}, now: now}
}

// clock is the time as the DynamoDB store writes it (UTC).
func (s *Deliveries) clock() time.Time { return s.now().UTC() }

func noEvidence(r delivery.Row) bool { return r.ProviderMessageID == "" && !r.HasEvidence() }

// neverSent is store's "never sent" guard: no notified_at, no
// notification_id, no provider evidence.
func neverSent(r delivery.Row) bool {
	return r.NotifiedAt.IsZero() && r.NotificationID == "" && noEvidence(r)
}

func clone(r delivery.Row) delivery.Row {
	r.BouncedMessageIDs = slices.Clone(r.BouncedMessageIDs)
	r.DuplicateMessageIDs = slices.Clone(r.DuplicateMessageIDs)
	r.Entries = slices.Clone(r.Entries)
	r.Dependents = slices.Clone(r.Dependents)
	return r
}

func conflict(id string) error { return fmt.Errorf("update delivery %s: %w", id, store.ErrConflict) }

// update applies f to row id under the lock when cond holds; a missing
// row fails every condition, as in DynamoDB.
func (s *Deliveries) update(id string, cond func(delivery.Row) bool, f func(*delivery.Row)) (delivery.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok || !cond(r) {
		return delivery.Row{}, conflict(id)
	}
	f(&r)
	s.rows[id] = r
	return clone(r), nil
}

// ours mirrors store.Deliveries: a conflict whose row shows the write
// applied is the result.
func (s *Deliveries) ours(ctx context.Context, id string, row delivery.Row, err error, applied func(delivery.Row) bool) (delivery.Row, error) {
	if err == nil {
		return row, nil
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return delivery.Row{}, fmt.Errorf("%w; %w", err, gerr)
	}
	if applied(cur) {
		return cur, nil
	}
	return cur, err
}

// Ensure implements store.Deliveries: a row created settled quietly on
// another (StandsOn) joins that row's dependents in the same step, while
// it carries the settlement (store.ErrNotReached otherwise).
func (s *Deliveries) Ensure(_ context.Context, r delivery.Row) (delivery.Row, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.rows[r.ID]; ok {
		return clone(old), false, nil
	}
	if r.StandsOn != "" {
		if !r.Status.Quiet() || r.StandsOn == r.ID {
			return delivery.Row{}, false, fmt.Errorf("ensure delivery %s standing on %s as %s: not a quiet settlement", r.ID, r.StandsOn, r.Status)
		}
		if err := s.standOn(r.StandsOn, r.ID, r.Status); err != nil {
			return delivery.Row{}, false, err
		}
	}
	s.rows[r.ID] = clone(r)
	return clone(r), true, nil
}

// standOn adds id to the dependents of row on, while on carries a quiet
// settlement of status (store.carries); the caller holds the lock.
func (s *Deliveries) standOn(on, id string, status delivery.Status) error {
	o, ok := s.rows[on]
	if !ok || !o.Carries(status) {
		return fmt.Errorf("delivery %s on %s: %w", id, on, store.ErrNotReached)
	}
	if !slices.Contains(o.Dependents, id) {
		o.Dependents = append(o.Dependents, id)
		slices.Sort(o.Dependents)
	}
	s.rows[on] = o
	return nil
}

// SettleQuiet implements store.Deliveries: both conditions, then both
// writes, in one step, as DynamoDB's transaction.
func (s *Deliveries) SettleQuiet(_ context.Context, id string, status delivery.Status, reason, on string) (delivery.Row, error) {
	if !status.Quiet() || on == "" || on == id {
		return delivery.Row{}, fmt.Errorf("settle delivery %s as %s on %q: not a quiet settlement", id, status, on)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok || !r.Status.Claimable() || !neverSent(r) {
		return delivery.Row{}, conflict(id)
	}
	if err := s.standOn(on, id, status); err != nil {
		return delivery.Row{}, err
	}
	r.Status, r.SkipReason, r.StandsOn, r.UpdatedAt = status, reason, on, now
	s.rows[id] = r
	return clone(r), nil
}

// Revive implements store.Deliveries.
func (s *Deliveries) Revive(_ context.Context, id, on string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool {
		return r.Status.Quiet() && r.StandsOn == on
	}, func(r *delivery.Row) {
		r.Status, r.SkipReason, r.StandsOn, r.RevivedFrom, r.UpdatedAt = delivery.StatusPending, "", "", on, now
	})
}

// Get implements store.Deliveries.
func (s *Deliveries) Get(_ context.Context, id string) (delivery.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return delivery.Row{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return clone(r), nil
}

// GetMany implements store.Deliveries.
func (s *Deliveries) GetMany(ctx context.Context, ids []string) ([]delivery.Row, error) {
	var out []delivery.Row
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if r, err := s.Get(ctx, id); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Claim implements store.Deliveries.
func (s *Deliveries) Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, func(r delivery.Row) bool {
		return r.Status.Claimable() && neverSent(r)
	}, func(r *delivery.Row) {
		r.Status, r.Attempts, r.LeaseUntil, r.ClaimToken, r.UpdatedAt = delivery.StatusSending, r.Attempts+1, now.Add(lease), token, now
	})
	return s.ours(ctx, id, row, err, sendingUnder(token))
}

// sendingUnder is store's claim-token guard: the row is in `sending` under
// this claim.
func sendingUnder(token string) func(delivery.Row) bool {
	return func(r delivery.Row) bool { return r.Status == delivery.StatusSending && r.ClaimToken == token }
}

// MarkSent implements store.Deliveries.
func (s *Deliveries) MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, sendingUnder(token), func(r *delivery.Row) {
		r.Status, r.NotificationID, r.NotifiedAt, r.UpdatedAt = delivery.StatusSent, notificationID, now, now
		r.LeaseUntil, r.ClaimToken, r.LastErrorClass = time.Time{}, "", ""
	})
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.NotificationID == notificationID })
}

// Release implements store.Deliveries.
func (s *Deliveries) Release(ctx context.Context, id, token string, status delivery.Status, errorClass string) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, sendingUnder(token), func(r *delivery.Row) {
		r.Status, r.LastErrorClass, r.UpdatedAt, r.LeaseUntil, r.ClaimToken = status, errorClass, now, time.Time{}, ""
	})
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == status && r.ClaimToken == "" && r.LastErrorClass == errorClass
	})
}

// Reject implements store.Deliveries.
func (s *Deliveries) Reject(ctx context.Context, id, providerMessageID string, at time.Time) (delivery.Row, error) {
	now := s.clock()
	row, err := s.update(id, func(r delivery.Row) bool {
		if r.NotificationID != "" {
			return r.NotificationID == providerMessageID
		}
		return (r.Status == delivery.StatusSending || r.Status == delivery.StatusFailedPermanent) &&
			(r.ProviderMessageID == "" || r.ProviderMessageID == providerMessageID)
	}, func(r *delivery.Row) {
		r.Status, r.LastErrorClass, r.UpdatedAt = delivery.StatusFailedPermanent, store.RejectedClass, now
		if r.RejectedAt.IsZero() {
			r.RejectedAt = at.UTC()
		}
		if r.ProviderMessageID == "" {
			r.ProviderMessageID = providerMessageID
		}
		r.LeaseUntil, r.ClaimToken = time.Time{}, ""
	})
	if err != nil {
		if _, gerr := s.Get(ctx, id); gerr != nil {
			return delivery.Row{}, gerr
		}
	}
	return row, err
}

// Backfill implements store.Deliveries.
func (s *Deliveries) Backfill(_ context.Context, id, notificationID string, at time.Time) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool { return r.NotifiedAt.IsZero() }, func(r *delivery.Row) {
		r.Status, r.NotificationID, r.NotifiedAt, r.UpdatedAt = delivery.StatusSent, notificationID, at.UTC(), now
		r.LeaseUntil, r.ClaimToken, r.LastErrorClass = time.Time{}, "", ""
	})
}

// Requeue implements store.Deliveries.
func (s *Deliveries) Requeue(_ context.Context, id string, errorClass string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool {
		return r.Status == delivery.StatusSending && r.LeaseUntil.Before(now) && neverSent(r)
	}, func(r *delivery.Row) {
		r.Status, r.LastErrorClass, r.UpdatedAt, r.ResentWithoutEvidence = delivery.StatusFailedTransient, errorClass, now, r.ResentWithoutEvidence+1
		r.LeaseUntil, r.ClaimToken, r.EvidenceCheckedAt = time.Time{}, "", time.Time{}
	})
}

// Awaiting implements store.Deliveries.
func (s *Deliveries) Awaiting(_ context.Context, id string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool { return r.Status == delivery.StatusSending }, func(r *delivery.Row) {
		r.EvidenceCheckedAt, r.LastErrorClass = now, "AWAITING_EVIDENCE"
	})
}

// RecordEvent implements store.Deliveries.
func (s *Deliveries) RecordEvent(ctx context.Context, id string, e store.Event) (delivery.Row, store.EventOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return delivery.Row{}, store.EventIgnored, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	at := e.At.UTC()
	var field *time.Time
	switch e.Type {
	case "Send":
		field = &r.SendEventAt
	case "Delivery":
		field = &r.DeliveredAt
	case "Bounce":
		field = &r.BouncedAt
	case "Complaint":
		field = &r.ComplainedAt
	case "Reject":
		field = &r.RejectedAt
	default:
		return clone(r), store.EventIgnored, nil
	}
	if r.Bounced(e.MessageID) {
		return clone(r), store.EventStale, nil
	}
	if (r.NotificationID != "" && r.NotificationID != e.MessageID) || (r.ProviderMessageID != "" && r.ProviderMessageID != e.MessageID) {
		if slices.Contains(r.DuplicateMessageIDs, e.MessageID) {
			return clone(r), store.EventIgnored, nil
		}
		r.DuplicateMessageIDs = append(r.DuplicateMessageIDs, e.MessageID)
		s.rows[id] = r
		return clone(r), store.EventDuplicate, nil
	}
	if field.IsZero() {
		*field = at
	}
	if r.ProviderMessageID == "" {
		r.ProviderMessageID = e.MessageID
	}
	if e.BounceType != "" {
		r.BounceType = e.BounceType
	}
	switch {
	case r.Status == delivery.StatusReconciling && !r.NotifiedAt.IsZero():
		r.Status = delivery.StatusSent
	case r.Status == delivery.StatusSent && e.Type == "Delivery":
		r.Status = delivery.StatusDelivered
	}
	if e.Suppresses() && (r.Status == delivery.StatusSent || r.Status == delivery.StatusDelivered) {
		r.Status = delivery.StatusSuppressed
	}
	s.rows[id] = r
	return clone(r), store.EventRecorded, nil
}

// RecordDuplicate implements store.Deliveries.
func (s *Deliveries) RecordDuplicate(_ context.Context, r delivery.Row, messageID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.rows[r.ID]
	if !ok || slices.Contains(cur.DuplicateMessageIDs, messageID) {
		return false, nil
	}
	cur.DuplicateMessageIDs = append(cur.DuplicateMessageIDs, messageID)
	s.rows[r.ID] = cur
	return true, nil
}

// Skip implements store.Deliveries.
func (s *Deliveries) Skip(_ context.Context, id string, status delivery.Status, reason string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool {
		return r.Status.Claimable() && neverSent(r)
	}, func(r *delivery.Row) { r.Status, r.SkipReason, r.UpdatedAt = status, reason, now })
}

// ResendAfterNotDelivered implements store.Deliveries.
func (s *Deliveries) ResendAfterNotDelivered(_ context.Context, id, providerMessageID, errorClass string, at time.Time, max int) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool {
		wasSent := (r.Status == delivery.StatusSent || r.Status == delivery.StatusDelivered || r.Status == delivery.StatusReconciling) &&
			r.NotificationID == providerMessageID
		lostAnswer := r.Status == delivery.StatusSending && r.NotificationID == "" && r.LeaseUntil.Before(now) &&
			(r.ProviderMessageID == "" || r.ProviderMessageID == providerMessageID)
		return (wasSent || lostAnswer) && r.BounceResends < max
	}, func(r *delivery.Row) {
		r.Status, r.LastErrorClass, r.LastBounceAt, r.UpdatedAt = delivery.StatusFailedTransient, errorClass, at.UTC(), now
		r.BounceResends++
		if !slices.Contains(r.BouncedMessageIDs, providerMessageID) {
			r.BouncedMessageIDs = append(r.BouncedMessageIDs, providerMessageID)
		}
		r.NotifiedAt, r.NotificationID, r.BounceType, r.LeaseUntil, r.ClaimToken, r.EvidenceCheckedAt = time.Time{}, "", "", time.Time{}, "", time.Time{}
		r.ProviderMessageID, r.SendEventAt, r.DeliveredAt, r.BouncedAt, r.ComplainedAt, r.RejectedAt = "", time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	})
}

// MarkReconciling implements store.Deliveries.
func (s *Deliveries) MarkReconciling(_ context.Context, id string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, func(r delivery.Row) bool {
		return r.Status == delivery.StatusSent && r.SendEventAt.IsZero() && r.DeliveredAt.IsZero() && r.Resolution != delivery.ResolvedSent
	}, func(r *delivery.Row) { r.Status, r.UpdatedAt = delivery.StatusReconciling, now })
}

func heldForOperator(now time.Time) func(delivery.Row) bool {
	return func(r delivery.Row) bool {
		return r.Status == delivery.StatusReconciling || (r.Status == delivery.StatusSending && r.LeaseUntil.Before(now))
	}
}

// ResolveSent implements store.Deliveries.
func (s *Deliveries) ResolveSent(_ context.Context, id string) (delivery.Row, error) {
	now := s.clock()
	return s.update(id, heldForOperator(now), func(r *delivery.Row) {
		r.Status, r.UpdatedAt, r.Resolution = delivery.StatusSent, now, delivery.ResolvedSent
		if r.NotifiedAt.IsZero() {
			r.NotifiedAt = now
		}
		r.LeaseUntil, r.ClaimToken, r.LastErrorClass = time.Time{}, "", ""
	})
}

// ClearAndRequeue implements store.Deliveries.
func (s *Deliveries) ClearAndRequeue(_ context.Context, id string) (delivery.Row, error) {
	now := s.clock()
	held := heldForOperator(now)
	return s.update(id, func(r delivery.Row) bool { return held(r) && noEvidence(r) }, func(r *delivery.Row) {
		r.Status, r.LastErrorClass, r.UpdatedAt, r.Resolution = delivery.StatusFailedTransient, "OPERATOR_REQUEUE", now, delivery.ResolvedRequeued
		r.NotifiedAt, r.NotificationID, r.LeaseUntil, r.ClaimToken, r.EvidenceCheckedAt = time.Time{}, "", time.Time{}, "", time.Time{}
	})
}

// Unsettled implements store.Deliveries.
func (s *Deliveries) Unsettled(_ context.Context, sentBefore time.Time, fn func(delivery.Row) error) error {
	s.mu.Lock()
	var rows []delivery.Row
	for _, r := range s.rows {
		if r.Unsettled(sentBefore) {
			rows = append(rows, clone(r))
		}
	}
	s.mu.Unlock()
	// In key order, as the index pages them: a run on the in-memory store
	// is then a function of its inputs.
	slices.SortFunc(rows, func(a, b delivery.Row) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
