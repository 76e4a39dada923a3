package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/vote"
)

// Dismissals is the in-memory store.Dismissals.
type Dismissals struct {
	mu    sync.Mutex
	marks map[[2]string]vote.Marks // (changelist key, recipient id)
}

// NewDismissals returns an empty dismissals store.
func NewDismissals() *Dismissals { return &Dismissals{marks: map[[2]string]vote.Marks{}} }

// Mark implements store.Dismissals.Mark.
func (s *Dismissals) Mark(_ context.Context, changelistKey, recipientID, key string, c vote.Choice, at time.Time) (vote.MarkOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{changelistKey, recipientID}
	marks, outcome := s.marks[k].Apply(key, c, at)
	if outcome.Changed() {
		s.marks[k] = marks
	}
	return outcome, nil
}

// Marks implements store.Dismissals.Marks; the maps returned are
// copies.
func (s *Dismissals) Marks(_ context.Context, changelistKey string, recipientIDs []string) (map[string]vote.Marks, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]vote.Marks{}
	for _, id := range recipientIDs {
		if m := s.marks[[2]string{changelistKey, id}]; len(m) > 0 {
			cp := make(vote.Marks, len(m))
			for k, v := range m {
				cp[k] = v
			}
			out[id] = cp
		}
	}
	return out, nil
}
