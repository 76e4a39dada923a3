package notify

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store"
)

// ThreadTitles keeps the title each changelist's conversation is named by
// (store.Jobs, on the changelist head; thread.go there says why there).
// A role interface because the title is the changelist's, not the job's:
// notify's dependencies say which part of the table it reads.
type ThreadTitles interface {
	// ThreadTitle is the kept title, "" when there is none.
	ThreadTitle(ctx context.Context, source, changelistID string) (string, error)
	// KeepThreadTitle keeps title unless one is kept, and returns the
	// one kept; ErrNotFound when the changelist has no head.
	KeepThreadTitle(ctx context.Context, source, changelistID, title string) (string, error)
}

// threadTitle is the title j's emails name in their subject
// (R-THREAD-1): the one kept for the changelist, which intake set when
// its first version was accepted. A changelist whose head predates that
// has none; it is then derived from the earliest version still known
// (walking up from version 1 over the deterministic job ids, at most
// pipeline.DefaultLookBack reads; j's own title when none of those is left) and
// kept, so the versions after j agree with it even once that version's
// job has expired. Without Titles, j's own title.
func (n *Notify) threadTitle(ctx context.Context, j job.Job) (string, error) {
	if n.Titles == nil {
		return j.Title, nil
	}
	t, err := n.Titles.ThreadTitle(ctx, j.Source, j.ChangelistID)
	if err != nil || t != "" {
		return t, err
	}
	first := j.Title
	for v := 1; v < j.ReviewVersion && v <= pipeline.DefaultLookBack; v++ {
		k, err := n.Jobs.Get(ctx, job.NewID(j.Source, j.ChangelistID, v))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("earliest version of %s: %w", j.ID, err)
		}
		first = k.Title
		break
	}
	t, err = n.Titles.KeepThreadTitle(ctx, j.Source, j.ChangelistID, first)
	if errors.Is(err, store.ErrNotFound) {
		// No head to keep it on (a job made without intake): nothing
		// later can disagree with what is not kept.
		return first, nil
	}
	return t, err
}
