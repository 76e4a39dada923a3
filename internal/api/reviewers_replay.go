package api

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// ReviewerReplays is how intake keeps reviewer webhooks from being
// replayed into work (R-BUDGET-3): their delivery ids, and their bodies
// where the signature does not cover the id, are remembered for Window,
// and the reviewer refreshes of one version are gathered over
// RefreshWindow into one task.
type ReviewerReplays struct {
	Store store.Replays
	// Window is how long a delivery id or body is remembered (the replay
	// window).
	Window time.Duration
	// RefreshWindow is how long events of one version are gathered into
	// one refresh, which runs at the window's end; 0 sends each at once.
	RefreshWindow time.Duration
}

// claimLease is how long an unfinished claim of a delivery keeps a
// replay away: longer than intake's own timeout, so only a claimer that
// died is taken over.
const claimLease = time.Minute

// DelayedEnqueuer sends a stage message that becomes visible after a
// delay (queue.Client.EnqueueAfter). A refresh is coalesced only through
// one: sent at once, a refresh could run before an event it stands for.
type DelayedEnqueuer interface {
	EnqueueAfter(ctx context.Context, m job.Message, delay time.Duration) error
}

// claimReviewerEvent records a reviewer event's delivery id and, when the
// source's signature does not cover that id (ev.KeyUnsigned), its body:
// a captured request replayed under a fresh id has the same body. It
// returns ok=false and the answer to give when the delivery was handled
// within the replay window (or is being handled now), and a function that
// settles the claims with intake's answer: a 5xx releases them, so the
// source's retry is handled; anything else marks them handled.
//
// The body is claimed first, so a flood of replays under fresh ids costs
// one conditional write each. A body byte for byte the same is the same
// event: it names the same reviewers at the same times, which the roster
// records once however often it is told, and the refresh reads the
// source's reviewers as they are when it runs. A key claimed here whose
// sibling turns out a replay is released: nothing was done under it.
func (in *Intake) claimReviewerEvent(ctx context.Context, ev webhook.Event, body []byte) (bool, events.APIGatewayV2HTTPResponse, func(events.APIGatewayV2HTTPResponse)) {
	noop := func(events.APIGatewayV2HTTPResponse) {}
	rp := in.ReviewerReplays
	c := ev.Change
	if rp == nil || rp.Store == nil || c.IdempotencyKey == "" {
		return true, events.APIGatewayV2HTTPResponse{}, noop
	}
	keys := []store.ReplayKey{store.ReplayByDelivery(c.Source, c.IdempotencyKey)}
	if ev.KeyUnsigned {
		keys = append([]store.ReplayKey{store.ReplayByBody(c.Source, body)}, keys...)
	}
	var claimed []store.ReplayKey
	settle := func(release bool) {
		// The answer is given whatever happens here: a claim left
		// unsettled is taken over after its lease.
		for _, k := range claimed {
			var err error
			if release {
				err = rp.Store.ReleaseDelivery(ctx, k)
			} else {
				err = rp.Store.CompleteDelivery(ctx, k)
			}
			if err != nil {
				in.Log.WarnContext(ctx, "settle the reviewer event's delivery record failed", "source", c.Source, "error", err)
			}
		}
	}
	for _, k := range keys {
		ok, err := rp.Store.ClaimDelivery(ctx, k, rp.Window, claimLease)
		if err != nil {
			settle(true)
			in.Log.ErrorContext(ctx, "record the reviewer event's delivery id failed", "source", c.Source, "error", err)
			return false, unavailable("could not record the delivery; retry it"), noop
		}
		if !ok {
			settle(true)
			by := "delivery_id"
			if k.Body {
				by = "body"
			}
			in.Log.InfoContext(ctx, "reviewer event replayed; nothing done", "source", c.Source, "seen_by", by)
			obs.Metric(ctx, in.Log, map[string]string{"Source": c.Source}, map[string]float64{"ReviewerEventReplays": 1})
			return false, jsonResponse(http.StatusAccepted, Recorded{Status: "duplicate", ChangelistID: c.ChangelistID,
				Note: "this delivery was handled already"}, nil), noop
		}
		claimed = append(claimed, k)
	}
	return true, events.APIGatewayV2HTTPResponse{}, func(resp events.APIGatewayV2HTTPResponse) {
		settle(resp.StatusCode >= 500)
	}
}

// enqueueRefresh asks the fetch stage for a reviewer refresh of id, one
// per RefreshWindow: the first event of a window schedules it, delayed to
// the window's end, so it reads the reviewers after every event of the
// window; the others find it scheduled.
func (in *Intake) enqueueRefresh(ctx context.Context, id job.ID) error {
	m := job.Message{JobID: id, Stage: job.StageFetch, Task: job.TaskReviewers}
	rp := in.ReviewerReplays
	delayed, canDelay := in.Queue.(DelayedEnqueuer)
	if rp == nil || rp.Store == nil || rp.RefreshWindow <= 0 || !canDelay {
		return in.Queue.Enqueue(ctx, m)
	}
	ok, err := rp.Store.ScheduleRefresh(ctx, id, rp.RefreshWindow)
	if err != nil {
		return err
	}
	if !ok {
		in.Log.InfoContext(ctx, "a reviewer refresh of the version is scheduled already", "job_id", id)
		obs.Metric(ctx, in.Log, nil, map[string]float64{"ReviewerRefreshesCoalesced": 1})
		return nil
	}
	if err := delayed.EnqueueAfter(ctx, m, rp.RefreshWindow); err != nil {
		if cerr := rp.Store.CancelRefresh(ctx, id); cerr != nil {
			in.Log.WarnContext(ctx, "cancel the reviewer refresh's schedule failed", "job_id", id, "error", cerr)
		}
		return err
	}
	return nil
}
