package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// ReplayRequest is `criticizer dlq replay`.
type ReplayRequest struct {
	Selector
	Note      string
	FromStart bool
	// Rate is the most replays per second (0: 1 per second).
	Rate float64
}

// Result says what happened to one item.
type Result struct {
	EnvelopeID string
	JobID      string
	Stage      job.Stage // where the replay resumes
	Err        error
}

// Replay sends each selected item back to its failed stage's queue (or to
// fetch with FromStart) with the operator's note in the envelope, records
// the note in the audit trail, and removes the item from the DLQ (R-STAGE-5 step
// 4: "Replay starts at the failed stage ... unless operator explicitly
// requests full restart"). Replays are paced by Rate.
func (o *Ops) Replay(ctx context.Context, r ReplayRequest) ([]Result, error) {
	if strings.TrimSpace(r.Note) == "" {
		return nil, ErrNoNote
	}
	rate := r.Rate
	if rate <= 0 {
		rate = 1
	}
	gap := time.Duration(float64(time.Second) / rate)
	items, err := o.take(ctx, r.Selector, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(items))
	for i, it := range items {
		if i > 0 {
			o.sleep(ctx, gap)
		}
		res := Result{EnvelopeID: it.Envelope.ID, JobID: it.Envelope.JobID, Stage: it.Stage}
		res.Err = o.replayOne(ctx, it, r, &res)
		if res.Err != nil {
			o.release(ctx, []Item{it})
		}
		results = append(results, res)
	}
	return results, nil
}

func (o *Ops) replayOne(ctx context.Context, it Item, r ReplayRequest, res *Result) error {
	action := "replay"
	if r.FromStart {
		action = "replay-from-start"
		res.Stage = job.StageFetch
		j, err := o.Jobs.Get(ctx, job.ID(it.Envelope.JobID))
		if err != nil {
			return err
		}
		if err := o.Jobs.Restart(ctx, j.ID, job.StageFetch, j.DiffURL != ""); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	it.Envelope.Annotate(action, r.Note, o.Now().UTC())
	body, err := json.Marshal(it.Envelope)
	if err != nil {
		return err
	}
	if _, err := o.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(o.Queues.Queue[res.Stage]), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("send to the %s queue: %w", res.Stage, err)
	}
	if err := o.audit(ctx, it, "replayed"); err != nil {
		return err
	}
	return o.delete(ctx, it)
}

// Resolve closes an item without replay, recording why (R-STAGE-5).
func (o *Ops) Resolve(ctx context.Context, id, note string) (Item, error) {
	if strings.TrimSpace(note) == "" {
		return Item{}, ErrNoNote
	}
	items, err := o.take(ctx, Selector{ID: id}, 2*time.Minute)
	if err != nil {
		return Item{}, err
	}
	it := items[0]
	o.release(ctx, items[1:])
	it.Envelope.Annotate("resolve", note, o.Now().UTC())
	if err := o.audit(ctx, it, "resolved"); err != nil {
		o.release(ctx, items[:1])
		return Item{}, err
	}
	return it, o.delete(ctx, it)
}

func (o *Ops) sleep(ctx context.Context, d time.Duration) {
	if o.Sleep != nil {
		o.Sleep(ctx, d)
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
