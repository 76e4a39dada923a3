package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// DefaultLookBack is how many earlier versions the llm stage walks back to
// find the review a rerun builds on.
const DefaultLookBack = 20

// LLM is the llm stage: it has the critic review the diff and persists
// the critique on the job.
type LLM struct {
	Base
	Critic critic.Critic
	// LookBack is how many earlier versions Handle walks back to find the
	// review a rerun builds on (Input.Previous, which critic.Incremental
	// reads); 0 looks for none, and every version is reviewed whole.
	LookBack int
	// Collapse is the collapse window (R-QUIET-3): notify is enqueued to
	// run this long after the version was accepted; zero: at once.
	Collapse time.Duration
	// Guard, if set, may end a job without a model run (llm_guard.go).
	Guard *ModelGuard
	// GeneratedPaths are the deployment's globs of generated files
	// (CRITICIZER_GENERATED_PATHS, R-CRITIC-7).
	GeneratedPaths []string
	// Learnings reads the rules a repository's accepted learnings leave
	// out of its reviews (R-LEARN-2); nil: none.
	Learnings LearnedRules
}

// LearnedRules reads a repository's accepted learnings
// (store.Learnings.Accepted): one GetItem per review.
type LearnedRules interface {
	Accepted(ctx context.Context, repoKey string) ([]string, error)
}

// Handle runs the llm stage for one message.
func (l *LLM) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := l.Begin(ctx, m, job.StageLLM)
	if err != nil || !ok {
		return err
	}
	if j.Skipped != "" {
		// The repository's settings skip the version (R-REPO-4): no model
		// runs, and notify closes the job without mailing anyone.
		return l.finish(ctx, j, job.StageLLM, attempt, store.JobWrite{})
	}
	if done, err := l.guard(ctx, j, attempt); err != nil || done {
		return err
	}
	// A diff whose object is gone comes back classified NOT_FOUND
	// (permanent) by the blob store.
	text, err := l.Blobs.Get(ctx, j.DiffRef, MaxDiffBytes)
	if err != nil {
		return err
	}
	head, err := l.headFiles(ctx, j)
	if err != nil {
		return err
	}
	prev, err := l.previous(ctx, j)
	if err != nil {
		return err
	}
	var unwanted []string
	if l.Learnings != nil {
		// Read on every attempt: a learning accepted while the version
		// waited applies to it. A failed read fails the attempt.
		if unwanted, err = l.Learnings.Accepted(ctx, vote.RepoKey(j)); err != nil {
			return fmt.Errorf("learnings of %s: %w", j.ID, err)
		}
	}
	c, err := critic.ReviewChange(ctx, l.Critic, critic.Input{
		ChangelistID: j.ChangelistID, ReviewVersion: j.ReviewVersion,
		Title: j.Title, Author: j.Author, URL: j.URL, Description: j.Description, Diff: string(text),
		// An operator reruns a version because something was wrong with
		// its review: every file is reviewed again (R-COST-3).
		Previous: prev, Fresh: j.RerunOf != "", Partial: j.DiffTruncated,
		Settings: j.Settings,
		// What is generated is the deployment's word or the base's, never
		// the change's (R-CRITIC-7).
		Generated: critic.Generated{Paths: l.GeneratedPaths, AtBase: j.GeneratedAtBase, BaseUnmerged: j.DiffBaseUnmerged},
		Unwanted:  unwanted,
		// The code around the hunks, as the head has it (R-CONTEXT-1).
		Head: head,
	})
	if errors.Is(err, critic.ErrInvalidDiff) {
		return retry.Permanent(retry.SchemaInvalid, err)
	}
	if err != nil {
		return fmt.Errorf("review %s: %w", j.ID, err)
	}
	// The team's accepted learnings leave their rules' findings out,
	// errors aside, whichever critic made them (R-LEARN-2).
	c = critic.LeaveOutLearned(c, unwanted)
	if j.DiffTruncated {
		c.Truncated = true
		c.Summary += " The diff was larger than the size limit: only its first files were reviewed."
	}
	// The code at each finding, from the diff reviewed, stored with it
	// so that notify renders it without reading the diff (R-MAIL-5).
	if d, err := diff.ParseString(string(text)); err == nil {
		c = critic.Excerpts(c, d)
	}
	// Whatever the critic returned, what is stored keeps the bounds: a
	// few findings per file, a hundred in all, and a size the job item
	// holds, so a review is always mailed (R-BOUND-1, R-BOUND-2); the
	// code at the findings is the first thing cut.
	c = critic.Bound(c)
	b, err := json.Marshal(c)
	if err != nil {
		return retry.Permanent(retry.RuntimeBug, fmt.Errorf("encode critique: %w", err))
	}
	if err := l.finishCollapsed(ctx, j, attempt, store.JobWrite{Critique: b}); err != nil {
		return err
	}
	if ch := c.Changes; ch != nil {
		l.Log.InfoContext(ctx, "reviewed on top of an earlier version", "job_id", j.ID, "since_version", ch.Since,
			"files_reviewed", ch.Reviewed, "files_carried", ch.Carried, "new", ch.New, "unchanged", ch.Unchanged, "resolved", ch.ResolvedCount)
	}
	l.metrics(ctx, c)
	return nil
}

// metrics emits what the review cost (R-CRITIC-6), the critique on the job
// holding the same figures: the model's tokens, those its prompt cache
// served or took (R-COST-4), and for a rerun how many files were sent to
// the critic and how many kept their findings without it (R-COST-3).
func (l *LLM) metrics(ctx context.Context, c critic.Critique) {
	counts := map[string]float64{}
	if u := c.Usage; u != nil {
		counts["ModelInputTokens"], counts["ModelOutputTokens"] = float64(u.InputTokens), float64(u.OutputTokens)
		if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
			counts["ModelCacheReadTokens"], counts["ModelCacheWriteTokens"] = float64(u.CacheReadTokens), float64(u.CacheWriteTokens)
		}
	}
	if ch := c.Changes; ch != nil {
		counts["FilesReviewed"], counts["FilesCarried"] = float64(ch.Reviewed), float64(ch.Carried)
	}
	if cx := c.Context; cx != nil {
		// The code around the hunks shown, and what the budget left out
		// (R-CONTEXT-2).
		counts["ContextFiles"], counts["ContextLines"] = float64(cx.Files), float64(cx.Lines)
		if cx.RegionsOverBudget > 0 {
			counts["ContextRegionsOverBudget"] = float64(cx.RegionsOverBudget)
		}
	}
	if c.NotShown > 0 {
		// Findings the bounds left out (R-BOUND-1).
		counts["FindingsNotShown"] = float64(c.NotShown)
	}
	if c.LearnedOut > 0 {
		// Findings the team's learnings left out (R-LEARN-2).
		counts["FindingsLearnedOut"] = float64(c.LearnedOut)
	}
	cut := 0
	for _, f := range c.Findings {
		if f.Excerpt.Cut {
			cut++
		}
	}
	if cut > 0 {
		// The code at findings the critique's size bound left out
		// (R-BOUND-2, R-MAIL-5): the diff decides how much there is.
		counts["FindingCodeCut"] = float64(cut)
	}
	if len(counts) > 0 {
		obs.Metric(ctx, l.Log, map[string]string{"Critic": c.Critic}, counts)
	}
}

// previous finds the review j builds on: walking back from the version
// before j's over the deterministic job ids, at most LookBack versions, the
// first job whose critique has a ledger. Versions have gaps — a generic
// caller chooses its numbers, a GitHub or GitLab version can be skipped
// under a race, Gerrit skips patch sets without a code change — so a
// missing job is passed over, and so is a job not reviewed yet and one
// dead-lettered (its email may never have gone out, so "new since" it would
// mislead). With none, the critic reviews the whole diff and the email
// says nothing about changes.
//
// It reads with GetItem on JOB# items only: the llm function may read
// nothing else. A failed read fails the attempt (retried); a critique that
// does not decode is passed over.
func (l *LLM) previous(ctx context.Context, j job.Job) (*critic.Previous, error) {
	for v := j.ReviewVersion - 1; v >= 1 && v >= j.ReviewVersion-l.LookBack; v-- {
		p, err := l.Jobs.Get(ctx, job.NewID(j.Source, j.ChangelistID, v))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("previous review of %s (version %d): %w", j.ID, v, err)
		}
		if p.Status == job.StatusDeadLettered || len(p.Critique) == 0 {
			continue
		}
		var c critic.Critique
		if err := json.Unmarshal(p.Critique, &c); err != nil {
			l.Log.WarnContext(ctx, "previous critique does not decode; passed over", "job_id", j.ID, "version", v, "error", err)
			continue
		}
		if c.Ledger == nil {
			continue
		}
		// Its code is its version's: this version's is taken from this
		// diff (R-MAIL-5).
		c.Findings = critic.WithoutExcerpts(c.Findings)
		return &critic.Previous{Version: v, Critique: c}, nil
	}
	return nil, nil
}

// headFiles reads the changed files the fetch stage stored as the head
// has them (job.Job.ContextRef, R-CONTEXT-1); nil when there are none.
// An object that is gone or does not decode costs the context, never the
// review: the hunks are reviewed alone, as before. Other failures are
// the blob store's, retried as the diff's are.
func (l *LLM) headFiles(ctx context.Context, j job.Job) (critic.HeadFiles, error) {
	if j.ContextRef == "" {
		return nil, nil
	}
	b, err := l.Blobs.Get(ctx, j.ContextRef, MaxContextBlobBytes)
	if re, ok := errors.AsType[*retry.Error](err); ok && re.Class == retry.NotFound {
		l.Log.WarnContext(ctx, "the code around the hunks is gone; the hunks are reviewed alone", "job_id", j.ID)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var head critic.HeadFiles
	if err := json.Unmarshal(b, &head); err != nil {
		l.Log.WarnContext(ctx, "the code around the hunks does not decode; the hunks are reviewed alone", "job_id", j.ID)
		return nil, nil
	}
	return head, nil
}
