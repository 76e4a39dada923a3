package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/source"
)

// Bounds on reading files' base versions for their generated-code marker
// (R-CRITIC-7): a change can make many files claim one, and each read is
// a request to the source.
const (
	// MaxBaseReads is how many files' base versions one version reads.
	MaxBaseReads = 8
	// BaseReadBytes is how much of each is read: the first lines.
	BaseReadBytes = 4 << 10
)

// generatedAtBase reads, at merged code (ref.BaseSHA: the base the
// event named, the merge request version's, Gerrit's destination branch
// tip — never the patch set's parent), the first lines of the files whose
// new version carries a "Code generated … DO NOT EDIT." marker that the
// diff cannot show at the base (critic.MarkerQuestions; every such file
// when the diff is against an unmerged change, baseUnmerged), and returns
// those whose version there carries it too: only they are left out as
// generated. A marker the change, or a change under it, wrote exempts
// nothing.
//
// Bounded and counted: at most MaxBaseReads files, BaseReadBytes of each,
// all by deadline: within one source.FileRequestTimeout, which the reads
// at the head share after them (the fetch message reserves
// it, R-STAGE-9); BaseFileReads counts the reads, GeneratedClaimsUnread
// the files past the bound or whose read failed. Those are never
// exempted: they are reviewed, so a source that cannot answer costs
// budget, never review. A source without a file API (generic) reads
// nothing.
func (f *Fetch) generatedAtBase(ctx context.Context, j job.Job, ref source.Ref, diffText string, baseUnmerged bool, deadline time.Time) []string {
	ff, ok := f.Source.(source.FileFetcher)
	if !ok {
		return nil
	}
	d, err := diff.ParseString(diffText)
	if err != nil {
		return nil // the llm stage refuses the diff
	}
	ask, more := critic.MarkerQuestions(d, critic.Generated{Paths: f.GeneratedPaths, BaseUnmerged: baseUnmerged}, MaxBaseReads)
	if len(ask) == 0 {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var found []string
	reads, unread := 0, 0
	if more {
		unread++ // at least one: MarkerQuestions stops counting at the bound
	}
	for _, p := range ask {
		if ctx.Err() != nil {
			unread++
			continue
		}
		reads++
		file, err := ff.BaseFile(ctx, ref, p, BaseReadBytes)
		switch {
		case err != nil:
			unread++
			if !errors.Is(err, context.DeadlineExceeded) {
				f.Log.WarnContext(ctx, "could not read a file's base version; its generated marker is reviewed as a claim", "job_id", j.ID, "error", err)
			}
		case file.Found && critic.HasGeneratedMarkerAtTop(file.Content):
			found = append(found, p)
		}
	}
	counts := map[string]float64{"BaseFileReads": float64(reads)}
	if unread > 0 {
		counts["GeneratedClaimsUnread"] = float64(unread)
	}
	obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, counts)
	return found
}
