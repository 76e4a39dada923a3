package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/vote"
)

// Dismissals keeps readers' marks on findings (R-VOTE-3): per
// (changelist, recipient), the latest choice on each finding a reader
// voted on, keyed by the finding's identity across versions.
type Dismissals interface {
	// Mark applies choice c, made at at, on the finding of key
	// (critic.SameKey) for the recipient (unsubscribe.RecipientID) on the
	// changelist (job.ChangelistKey): vote.Marks.Apply, stored.
	Mark(ctx context.Context, changelistKey, recipientID, key string, c vote.Choice, at time.Time) (vote.MarkOutcome, error)
	// Marks reads the marks of each recipient on the changelist; a
	// recipient with none is absent from the map.
	Marks(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]vote.Marks, error)
}
