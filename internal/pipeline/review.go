package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// Review is the llm stage: it has the critic review the diff and persists
// the critique on the job.
type Review struct {
	Base
	Critic critic.Critic
}

// Handle runs the llm stage for one message.
func (r *Review) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := r.begin(ctx, m, job.StageLLM)
	if err != nil || !ok {
		return err
	}
	// A diff whose object is gone comes back classified NOT_FOUND
	// (permanent) by the blob store.
	diff, err := r.Blobs.Get(ctx, j.DiffRef, MaxDiffBytes)
	if err != nil {
		return err
	}
	c, err := r.Critic.Review(ctx, critic.Input{
		ChangelistID: j.ChangelistID, ReviewVersion: j.ReviewVersion,
		Title: j.Title, Author: j.Author, URL: j.URL, Description: j.Description, Diff: string(diff),
	})
	if errors.Is(err, critic.ErrInvalidDiff) {
		return retry.Permanent(retry.SchemaInvalid, err)
	}
	if err != nil {
		return fmt.Errorf("review %s: %w", j.ID, err)
	}
	if j.DiffTruncated {
		c.Truncated = true
		c.Summary += " The diff was larger than the size limit: only its first files were reviewed."
	}
	b, err := json.Marshal(c)
	if err != nil {
		return retry.Permanent(retry.RuntimeBug, fmt.Errorf("encode critique: %w", err))
	}
	if err := r.finish(ctx, j, job.StageLLM, attempt, map[string]any{"critique": b}); err != nil {
		return err
	}
	// What the review cost (R-CRITIC-6); the critique on the job holds the
	// same figures.
	if c.Usage != nil {
		obs.Metric(ctx, r.Log, map[string]string{"Critic": c.Critic}, map[string]float64{
			"ModelInputTokens": float64(c.Usage.InputTokens), "ModelOutputTokens": float64(c.Usage.OutputTokens)})
	}
	return nil
}
