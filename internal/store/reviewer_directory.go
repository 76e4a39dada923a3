package store

import (
	"context"

	"github.com/criticizer/criticizer/internal/reviewers"
)

// Directory is the directory's contract (dynamo.Directory on DynamoDB,
// memstore.Directory in memory; storetest.Reviewers proves them alike).
type Directory interface {
	reviewers.EntryReader
	Set(ctx context.Context, source, username, email, by string) (reviewers.Entry, error)
	Remove(ctx context.Context, source, username, by string) (bool, error)
	Get(ctx context.Context, source, username string) (reviewers.Entry, error)
	List(ctx context.Context, source string) ([]reviewers.Entry, error)
	NoteUnknown(ctx context.Context, source string, usernames []string) error
	Unknown(ctx context.Context, source string) ([]string, error)
}
