package store

import (
	"context"

	"github.com/criticizer/criticizer/internal/reviewers"
)

// Rosters is the rosters' contract (dynamo.Rosters on DynamoDB,
// memstore.Rosters in memory).
type Rosters interface {
	Get(ctx context.Context, source, changelistID string) (reviewers.Roster, error)
	Apply(ctx context.Context, source, changelistID string, events []reviewers.Event) (reviewers.Roster, error)
}
