package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/criticizer/criticizer/internal/vote"
)

// Votes is the in-memory store.Votes.
type Votes struct {
	mu    sync.Mutex
	votes map[[2]string]vote.Vote // (delivery id, finding id)
}

// NewVotes returns an empty vote store.
func NewVotes() *Votes { return &Votes{votes: map[[2]string]vote.Vote{}} }

// Record implements store.Votes.Record.
func (s *Votes) Record(_ context.Context, v vote.Vote) (vote.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{v.DeliveryID, v.FindingID}
	prev, ok := s.votes[k]
	s.votes[k] = v
	switch {
	case !ok:
		return vote.Recorded, nil
	case prev.Choice == v.Choice:
		return vote.Repeat, nil
	default:
		return vote.Changed, nil
	}
}

// List implements store.Votes.List, in key order.
func (s *Votes) List(context.Context) ([]vote.Vote, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]vote.Vote, 0, len(s.votes))
	for _, v := range s.votes {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b vote.Vote) int {
		return cmp.Or(cmp.Compare(a.DeliveryID, b.DeliveryID), cmp.Compare(a.FindingID, b.FindingID))
	})
	return out, nil
}
