package store

import (
	"context"

	"github.com/criticizer/criticizer/internal/vote"
)

// Votes keeps readers' votes on findings (R-VOTE-1): one item per
// (delivery, finding), the latest choice.
type Votes interface {
	// Record stores v, replacing an earlier choice on the same finding of
	// the same email, and says whether it was new, changed or a repeat.
	Record(ctx context.Context, v vote.Vote) (vote.Outcome, error)
	// List returns every vote kept, for make eval's report.
	List(ctx context.Context) ([]vote.Vote, error)
}
