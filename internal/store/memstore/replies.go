package memstore

import (
	"context"
	"sync"
	"time"
)

// Replies is the in-memory store.Mutes, store.ReplyWindows and
// store.ReplyClaims.
type Replies struct {
	mu      sync.Mutex
	mutes   map[[2]string]time.Time    // (changelist key, recipient id)
	windows map[string]map[string]bool // delivery id and window start -> message ids
	claims  map[string]string          // confirmation id -> the SES message id acting on it
}

// NewReplies returns an empty replies store.
func NewReplies() *Replies {
	return &Replies{mutes: map[[2]string]time.Time{}, windows: map[string]map[string]bool{}, claims: map[string]string{}}
}

// Mute implements store.Mutes.Mute.
func (s *Replies) Mute(_ context.Context, changelistKey, recipientID string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{changelistKey, recipientID}
	if _, ok := s.mutes[k]; !ok {
		s.mutes[k] = at
	}
	return nil
}

// Muted implements store.Mutes.Muted.
func (s *Replies) Muted(_ context.Context, changelistKey string, recipientIDs []string) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, id := range recipientIDs {
		if _, ok := s.mutes[[2]string{changelistKey, id}]; ok {
			out[id] = true
		}
	}
	return out, nil
}

// Admit implements store.ReplyWindows.Admit.
func (s *Replies) Admit(_ context.Context, deliveryID, messageID string, start time.Time, _ time.Duration, max int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := deliveryID + "#" + start.UTC().Format(time.RFC3339)
	w := s.windows[k]
	if w == nil {
		w = map[string]bool{}
		s.windows[k] = w
	}
	if w[messageID] {
		return true, nil
	}
	if len(w) >= max {
		return false, nil
	}
	w[messageID] = true
	return true, nil
}

// Claim implements store.ReplyClaims.Claim.
func (s *Replies) Claim(_ context.Context, confirmationID, sesMessageID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner, ok := s.claims[confirmationID]; ok {
		return owner == sesMessageID, nil
	}
	s.claims[confirmationID] = sesMessageID
	return true, nil
}
