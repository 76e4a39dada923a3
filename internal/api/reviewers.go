package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Rosters records what reviewer webhooks say (store.Rosters).
type Rosters interface {
	Apply(ctx context.Context, source, changelistID string, events []reviewers.Event) (reviewers.Roster, error)
}

// ReviewersUpdated is the 202 body of a reviewer webhook: a reviewer was
// requested for a version that already has a job, and the fetch stage is
// asked to add them (R-REVIEWERS-1).
type ReviewersUpdated struct {
	JobID         job.ID `json:"job_id"`
	Status        string `json:"status"` // always "reviewers_updated"
	ChangelistID  string `json:"changelist_id"`
	ReviewVersion int    `json:"review_version"`
	Links         Links  `json:"links"`
}

// Recorded is the 202 body of a reviewer webhook that mails nobody now: a
// removal or a submitted review, which count from the next version.
type Recorded struct {
	Status       string `json:"status"` // always "recorded"
	ChangelistID string `json:"changelist_id"`
	Note         string `json:"note"`
}

// recordRoster merges what the event says about reviewers into the
// changelist's roster (R-REVIEWERS-2). The event's own time orders it;
// intake's clock stands in when the payload has none.
func (in *Intake) recordRoster(ctx context.Context, ev webhook.Event) error {
	c := ev.Roster
	if c == nil || in.Rosters == nil {
		return nil
	}
	at := c.At
	if at.IsZero() {
		at = in.Now().UTC()
	}
	var evs []reviewers.Event
	add := func(names []string, k reviewers.Kind) {
		for _, n := range names {
			evs = append(evs, reviewers.Event{Username: n, Kind: k, At: at})
		}
	}
	add(c.Requested, reviewers.Requested)
	add(c.Removed, reviewers.Removed)
	add(c.Reviewed, reviewers.Reviewed)
	if len(evs) == 0 {
		return nil
	}
	_, err := in.Rosters.Apply(ctx, ev.Change.Source, ev.Change.ChangelistID, evs)
	return err
}

// reviewersChanged answers an event that changes reviewers and no code
// (R-REVIEWERS-1): a removal or a review is recorded and mails nobody now;
// a reviewer asked to review is added to the version being reviewed — the
// job of the event's head commit (or patch set) when it has one, else the
// changelist's latest — by a reviewer refresh the fetch stage runs. A
// version nobody has reviewed yet (the first reviewer requested on a pull
// request opened before Criticizer was installed, a push whose webhook is
// still on its way) is reviewed like a new version, the new reviewer among
// its recipients.
//
// Nothing here needs an idempotency record: recording the roster and
// asking for a refresh are both idempotent, so a redelivery does them
// again harmlessly and gets the same answer.
func (in *Intake) reviewersChanged(ctx context.Context, ev webhook.Event, body []byte) events.APIGatewayV2HTTPResponse {
	c := ev.Change
	if !ev.Roster.Added() {
		in.Log.InfoContext(ctx, "reviewers recorded", "source", c.Source)
		return jsonResponse(http.StatusAccepted, Recorded{Status: "recorded", ChangelistID: c.ChangelistID,
			Note: "reviewer removals and submitted reviews count from the next version"}, nil)
	}
	v, placed, stale := c.ReviewVersion, false, false
	if v == 0 {
		p, answer, ok := in.placeHead(ctx, ev)
		switch {
		case !ok && !p.Stale:
			return answer
		case p.Stale:
			// A head behind a versioned one (R-SOURCE-6): the reviewer
			// joins the latest version, as for an older version.
			stale = true
		default:
			v, placed = p.Version, in.placedLately(p)
		}
	}
	latest, latestID, err := in.Jobs.LatestVersion(ctx, c.Source, c.ChangelistID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		in.Log.ErrorContext(ctx, "read the changelist's head failed", "source", c.Source, "error", err)
		return unavailable("could not read the changelist; retry the delivery")
	}
	id := job.NewID(c.Source, c.ChangelistID, v)
	switch {
	case stale && latestID == "":
		in.Log.InfoContext(ctx, "reviewers recorded; the event's head is stale and nothing is reviewed yet", "source", c.Source)
		return jsonResponse(http.StatusAccepted, Recorded{Status: "recorded", ChangelistID: c.ChangelistID,
			Note: "the event's head commit is behind a newer one; the reviewer gets the next versions"}, nil)
	case latestID != "" && (ev.NoCodeChange || stale || latest > v):
		// The event's version has the latest reviewed code (a Gerrit patch
		// set that changed only its message), or is older than it: the
		// reviewer is added to the latest.
		id, v = latestID, latest
	case latestID != "" && latest == v:
		id = latestID
	default:
		if _, err := in.Jobs.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			c.ReviewVersion = v
			return in.startReview(ctx, ev, c, body, placed)
		} else if err != nil {
			in.Log.ErrorContext(ctx, "read the version's job failed", "job_id", id, "error", err)
			return unavailable("could not read the review; retry the delivery")
		}
	}
	if err := in.enqueueRefresh(ctx, id); err != nil {
		in.Log.ErrorContext(ctx, "enqueue the reviewer refresh failed", "job_id", id, "error", err)
		return unavailable("could not ask for the new reviewer; retry the delivery")
	}
	in.Log.InfoContext(ctx, "reviewer requested; the version's reviewers will be refreshed", "job_id", id, "review_version", v)
	return jsonResponse(http.StatusAccepted, ReviewersUpdated{JobID: id, Status: "reviewers_updated", ChangelistID: c.ChangelistID,
		ReviewVersion: v, Links: Links{Self: in.Status.Link(id)}}, nil)
}
