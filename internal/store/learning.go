package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/vote"
)

// Learnings keeps the tally of readers' choices per rule and repository,
// and the operator's decisions on them (R-LEARN-1, R-LEARN-2).
type Learnings interface {
	// Tally counts a reader's choice on a rule in a repository, replacing
	// their earlier one: TallyCounted, or TallyFull (not counted) when the
	// rule has MaxLearnReaders readers with that choice already, or the
	// repository MaxLearnRules rules and this one is new.
	Tally(ctx context.Context, t vote.Tally) (vote.TallyOutcome, error)
	// List returns every learning with its counts; an undecided one has
	// State "" (vote.Learning.Classify decides whether it is proposed).
	List(ctx context.Context) ([]vote.Learning, error)
	// Get returns one learning by id; ErrNotFound when no reader's choice
	// on it was counted.
	Get(ctx context.Context, id string) (vote.Learning, error)
	// Decide records an operator's Accepted or Rejected on an undecided
	// learning: ErrNotFound when there is none, ErrConflict when it was
	// decided already. It returns the learning as decided.
	Decide(ctx context.Context, id string, s vote.LearningState, at time.Time) (vote.Learning, error)
	// Accepted returns the rules accepted for a repository (by RepoKey),
	// sorted; none when it has none.
	Accepted(ctx context.Context, repoKey string) ([]string, error)
}
