package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Intake turns a verified webhook into a job, exactly once per idempotency
// key and per review version.
type Intake struct {
	Jobs  JobCreator
	Blobs Blobs
	Queue Enqueuer
	Log   *slog.Logger
	Now   func() time.Time
	// TTL is how long idempotency records live (DynamoDB TTL).
	TTL time.Duration
	// Versions places head commits among their changelist's versions,
	// in the code host's order, for sources whose payloads carry no
	// version (GitHub, GitLab); usually Jobs.
	Versions HeadPlacer
	// Status mints the job status links the answers carry.
	Status *StatusLinks
	// Rosters records reviewer webhooks (R-REVIEWERS-2); nil records
	// nothing.
	Rosters Rosters
	// ReviewerReplays deduplicates reviewer webhooks and coalesces their
	// refreshes (R-BUDGET-3); nil does neither.
	ReviewerReplays *ReviewerReplays
}

// JobCreator is what intake does with the jobs table (store.Jobs). A
// role interface of its own because the explorer stands between intake
// and memstore on exactly these calls (internal/explore's intakeJobs,
// which makes Create's transaction a step it can crash at).
type JobCreator interface {
	Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error)
	PutSourceRef(ctx context.Context, id job.ID, ref store.SourceRef) error
	Get(ctx context.Context, id job.ID) (job.Job, error)
	LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error)
}

// Blobs keeps inline diffs (blob.Store).
type Blobs interface {
	Put(ctx context.Context, prefix string, b []byte) (ref, sha string, err error)
}

// Accepted is the 202 body, stored and replayed byte for byte.
type Accepted struct {
	JobID         job.ID `json:"job_id"`
	Status        string `json:"status"`
	ChangelistID  string `json:"changelist_id"`
	ReviewVersion int    `json:"review_version"`
	Links         Links  `json:"links"`
}

// Links point at the job resource.
type Links struct {
	Self string `json:"self"`
}

// Ignored is the body answered, with 202, to an authentic webhook that
// needs no review (a ping, a draft, an event type that is not reviewed):
// nothing is created.
type Ignored struct {
	Status string `json:"status"` // always "ignored"
	Reason string `json:"reason"`
}

// HeadPlacer gives a head commit of a changelist its review version
// (store.Heads.PlaceHead, R-SOURCE-6): the same commit always the same
// version; a new one the next, unless its event shows the code host
// places it behind a versioned head (stale: no version).
type HeadPlacer interface {
	PlaceHead(ctx context.Context, ev store.HeadEvent) (store.Placement, error)
}

// StaleHead is the body answered, with 200, to a code host's event whose
// head commit the host places behind a version already given
// (R-SOURCE-6), or whose version is below the changelist's newest
// (a Gerrit patch set after a later one): nothing is created, nobody is
// mailed. A 2xx, not the 409 a generic caller's lower review_version
// gets: the sender did nothing wrong (webhooks come in any order), and
// GitHub and GitLab show any other status as a failed delivery, which
// invites an operator to redeliver it — to be answered the same again.
type StaleHead struct {
	Status         string `json:"status"` // always "stale"
	ChangelistID   string `json:"changelist_id"`
	CurrentVersion int    `json:"current_version"`
	Reason         string `json:"reason"`
}

// Handle runs intake for one request.
//
// Order matters for "loses nothing": the inline diff is stored first, then
// the job is persisted (one transaction), then the fetch stage enqueued,
// and the 202 is answered only after all three. A job therefore never
// names a diff that is not stored: when intake dies between the
// transaction and the enqueue, the sweeper's re-enqueue of the stuck job
// carries it on as well as the caller's retry does (R-INTAKE-5; found by
// internal/explore's duplicate-webhooks scenario: with the diff stored
// after the job, that re-enqueue reached the llm stage without a diff and
// the job was dead-lettered NOT_FOUND). If a step fails the caller gets a
// 503 and retries with the same key; the retry is a replay, which
// finishes the enqueueing for a job still `accepted` and answers the
// stored 202.
//
// A code review system's webhook (p is an EventParser) first gets its
// review version when the payload has none (GitHub, GitLab: one per head
// commit), and its source reference is recorded (store.SourceRef: where the
// fetch stage finds the diff and the reviewers) before the job is created,
// so every such job has one.
func (in *Intake) Handle(ctx context.Context, p Parser, r webhook.Request) events.APIGatewayV2HTTPResponse {
	if ep, ok := p.(EventParser); ok {
		return in.handleEvent(ctx, ep, r)
	}
	c, err := p.Parse(r)
	if err != nil {
		return in.reject(ctx, "", err)
	}
	return in.accept(ctx, c, sha256Hex(r.Body), false)
}

func (in *Intake) handleEvent(ctx context.Context, p EventParser, r webhook.Request) (resp events.APIGatewayV2HTTPResponse) {
	ev, err := p.ParseEvent(r)
	if err != nil {
		return in.reject(ctx, ev.Change.Source, err)
	}
	c := ev.Change
	if ev.Skip != "" {
		return in.ignore(ctx, c.Source, ev.Skip)
	}
	if ev.ReviewersOnly {
		ok, answer, settle := in.claimReviewerEvent(ctx, ev, r.Body)
		if !ok {
			return answer
		}
		defer func() { settle(resp) }()
	}
	if err := in.recordRoster(ctx, ev); err != nil {
		in.Log.ErrorContext(ctx, "record reviewers failed", "source", c.Source, "error", err)
		return unavailable("could not record the reviewers; retry the delivery")
	}
	if ev.ReviewersOnly {
		return in.reviewersChanged(ctx, ev, r.Body)
	}
	placed := false
	if c.ReviewVersion == 0 {
		p, answer, ok := in.placeHead(ctx, ev)
		if !ok {
			return answer
		}
		c.ReviewVersion, placed = p.Version, in.placedLately(p)
	}
	return in.startReview(ctx, ev, c, r.Body, placed)
}

// placeHead places the event's head commit among its changelist's
// versions (R-SOURCE-6). ok is false when answer is the whole answer: the
// head is stale, or the store failed.
func (in *Intake) placeHead(ctx context.Context, ev webhook.Event) (p store.Placement, answer events.APIGatewayV2HTTPResponse, ok bool) {
	c := ev.Change
	if in.Versions == nil {
		in.Log.ErrorContext(ctx, "no head placer configured", "source", c.Source)
		return p, problem(http.StatusInternalServerError, "", "intake is not configured for this source"), false
	}
	p, err := in.Versions.PlaceHead(ctx, store.HeadEvent{Source: c.Source, ChangelistID: c.ChangelistID, HeadSHA: ev.HeadSHA, BeforeSHA: ev.BeforeSHA})
	if err != nil {
		in.Log.ErrorContext(ctx, "place the head commit failed", "source", c.Source, "error", err)
		return p, unavailable("could not assign a review version; retry the delivery"), false
	}
	if p.Stale {
		return p, in.staleHead(ctx, c, p.Current, "the code host places this head commit behind a version already reviewed"), false
	}
	return p, events.APIGatewayV2HTTPResponse{}, true
}

// placedLately: the head got its version lately enough that its job may
// be created below the changelist's head (store.CreateRequest.Placed):
// within the idempotency window, where a retry or a race of its own
// delivery falls. An older head's job has long been created — or has
// expired with the rows that showed what its readers got, and must not
// be reviewed and mailed again.
func (in *Intake) placedLately(p store.Placement) bool {
	return !p.PlacedAt.IsZero() && in.Now().Sub(p.PlacedAt) < in.TTL
}

// staleHead answers a code host's event that asks for no version: its
// head is behind the changelist's newest (R-SOURCE-6), counted as
// StaleHeads: the order pushes reach intake is the author's (and
// GitHub's) to choose.
func (in *Intake) staleHead(ctx context.Context, c webhook.Change, current int, reason string) events.APIGatewayV2HTTPResponse {
	in.Log.InfoContext(ctx, "stale head commit", "source", c.Source, "current_version", current)
	obs.Metric(ctx, in.Log, map[string]string{"Source": c.Source}, map[string]float64{"StaleHeads": 1})
	return jsonResponse(http.StatusOK, StaleHead{Status: "stale", ChangelistID: c.ChangelistID, CurrentVersion: current, Reason: reason}, nil)
}

// startReview creates the job of a code review system's version c (its
// version assigned) and starts it: the source reference first, then the
// job (accept). placed: the version was placed in the code host's order
// lately (placedLately).
func (in *Intake) startReview(ctx context.Context, ev webhook.Event, c webhook.Change, body []byte, placed bool) events.APIGatewayV2HTTPResponse {
	id := job.NewID(c.Source, c.ChangelistID, c.ReviewVersion)
	ref := store.SourceRef{Source: c.Source, Repo: ev.Repo, Number: ev.Number, HeadSHA: ev.HeadSHA, BaseSHA: ev.BaseSHA, Patchset: ev.Patchset,
		Reviewers: ev.Reviewers, Labels: webhook.Labels(c.Source, body)}
	if err := in.Jobs.PutSourceRef(ctx, id, ref); err != nil {
		in.Log.ErrorContext(ctx, "record source reference failed", "job_id", id, "error", err)
		return unavailable("could not record the change; retry the delivery")
	}
	reqSHA := sha256Hex(body)
	if c.Source == "gerrit" {
		// Gerrit's idempotency key is derived from the event (change,
		// patch set, event type), not a delivery id: a re-sent event may
		// differ in incidental fields (eventCreatedOn) and must replay,
		// not be refused as the key reused with another request.
		reqSHA = sha256Hex(fmt.Appendf(nil, "%q %q %d %q %q %q %q", c.Source, c.ChangelistID, c.ReviewVersion, ev.HeadSHA, c.Title, c.URL, c.Author))
	}
	return in.accept(ctx, c, reqSHA, placed)
}

// reject answers a request the adapter refused (or, for a Parser, asked to
// skip).
func (in *Intake) reject(ctx context.Context, source string, err error) events.APIGatewayV2HTTPResponse {
	var skip *webhook.SkipError
	if errors.As(err, &skip) {
		return in.ignore(ctx, source, skip.Reason)
	}
	var fe *webhook.FieldError
	var tl *webhook.TooLargeError
	field := ""
	switch {
	case errors.As(err, &fe):
		field = fe.Field
	case errors.As(err, &tl):
		// The body as a whole is at fault (R-LIMIT-3).
		field = "body"
	}
	status := webhook.Status(err)
	in.Log.InfoContext(ctx, "webhook rejected", "source", source, "status", status, "field", field)
	return problem(status, field, err.Error())
}

func (in *Intake) ignore(ctx context.Context, source, reason string) events.APIGatewayV2HTTPResponse {
	in.Log.InfoContext(ctx, "webhook ignored", "source", source, "reason", reason)
	return jsonResponse(http.StatusAccepted, Ignored{Status: "ignored", Reason: reason}, nil)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// accept creates the job for a validated change (or finds the one a
// duplicate names) and starts it. placed: its version was placed in the
// code host's order (store.CreateRequest.Placed).
func (in *Intake) accept(ctx context.Context, c webhook.Change, requestSHA string, placed bool) events.APIGatewayV2HTTPResponse {
	keySum := sha256.Sum256([]byte(c.IdempotencyKey))
	now := in.Now().UTC()
	id := job.NewID(c.Source, c.ChangelistID, c.ReviewVersion)
	recipients := c.Recipients
	if recipients == nil {
		// Code review systems name reviewers, not addresses: the fetch
		// stage resolves them and records the addresses on the job.
		recipients = []string{}
	}
	j := job.Job{
		ID: id, Source: c.Source, ChangelistID: c.ChangelistID, ReviewVersion: c.ReviewVersion,
		Title: c.Title, Description: c.Description, URL: c.URL, Author: c.Author, Recipients: recipients, DiffURL: c.DiffURL,
		Repository: c.Repository, Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{},
		CreatedAt: now, UpdatedAt: now,
		// A version a code host's event derives is quiet; a generic
		// caller's review_version is its explicit request, unless it opted
		// in to the quiet rules (R-RERUN-2).
		Explicit: !job.IsReviewSystem(c.Source) && !c.Quiet,
	}
	if c.Diff != "" {
		// The reference is content-addressed: the object is written before
		// the job that names it exists (R-INTAKE-5), and writing it again
		// (a retry, a duplicate, a request then refused) writes the same
		// object.
		ref, sha, err := in.Blobs.Put(ctx, "diffs", []byte(c.Diff))
		if err != nil {
			in.Log.ErrorContext(ctx, "store diff failed", "job_id", id, "error", err)
			return unavailable("could not store the diff; retry with the same Idempotency-Key")
		}
		j.DiffRef, j.DiffSHA256 = ref, sha
	}
	respBody, err := json.Marshal(Accepted{JobID: id, Status: string(job.StatusAccepted), ChangelistID: c.ChangelistID,
		ReviewVersion: c.ReviewVersion, Links: Links{Self: in.Status.Link(id)}})
	if err != nil {
		return problem(http.StatusInternalServerError, "", "could not encode the response")
	}
	res, err := in.Jobs.Create(ctx, store.CreateRequest{
		Job: j, IdempotencyKeySHA: hex.EncodeToString(keySum[:]), RequestSHA256: requestSHA,
		ResponseStatus: http.StatusAccepted, ResponseBody: respBody, TTL: in.TTL, Placed: placed,
	})
	if err != nil {
		in.Log.ErrorContext(ctx, "create job failed", "job_id", id, "error", err)
		return unavailable("could not record the job; retry with the same Idempotency-Key")
	}
	log := in.Log.With("job_id", id, "source", c.Source, "review_version", c.ReviewVersion)
	switch res.Outcome {
	case store.KeyReused:
		log.InfoContext(ctx, "idempotency key reused with a different request")
		return problem(http.StatusUnprocessableEntity, "Idempotency-Key", "this Idempotency-Key was already used with a different request body")
	case store.Stale:
		if job.IsReviewSystem(c.Source) {
			// A code host's event: the sender did nothing wrong
			// (StaleHead).
			return in.staleHead(ctx, c, res.CurrentVersion, fmt.Sprintf("version %d is below the newest, %d", c.ReviewVersion, res.CurrentVersion))
		}
		log.InfoContext(ctx, "stale review version", "current_version", res.CurrentVersion)
		if res.CurrentVersion == c.ReviewVersion {
			// The version was reviewed; its job record expired (retention)
			// while the changelist's head, which never expires, remains.
			// Nothing is reviewed or sent again.
			return problem(http.StatusConflict, "review_version", fmt.Sprintf(
				"review version %d was already reviewed; its record has expired, so nothing is done again", c.ReviewVersion))
		}
		return problem(http.StatusConflict, "review_version",
			(&job.StaleError{Requested: c.ReviewVersion, Current: res.CurrentVersion}).Error())
	case store.VersionExists:
		log.InfoContext(ctx, "review version already has a job; nothing new to do", "existing_status", res.Job.Status)
		return jsonResponse(http.StatusOK, existing(res.Job, in.Status), nil)
	case store.Replayed:
		if res.Job.Status == job.StatusAccepted {
			// The first request may have died between persisting and
			// enqueueing; finishing its work again is harmless.
			if err := in.start(ctx, res.Job); err != nil {
				log.ErrorContext(ctx, "re-start of an accepted job failed", "error", err)
				return unavailable("could not enqueue the job; retry with the same Idempotency-Key")
			}
		}
		log.InfoContext(ctx, "idempotent replay")
		resp := rawResponse(res.ResponseStatus, res.ResponseBody, map[string]string{"Idempotent-Replayed": "true", "Location": in.Status.Link(id)})
		return resp
	}
	if err := in.start(ctx, j); err != nil {
		log.ErrorContext(ctx, "start job failed", "error", err)
		return unavailable("the job is recorded but could not be enqueued; retry with the same Idempotency-Key")
	}
	log.InfoContext(ctx, "job accepted")
	return rawResponse(http.StatusAccepted, respBody, map[string]string{"Location": in.Status.Link(id)})
}

// start enqueues the fetch stage of a persisted job.
func (in *Intake) start(ctx context.Context, j job.Job) error {
	if err := in.Queue.Enqueue(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}); err != nil {
		return fmt.Errorf("enqueue fetch: %w", err)
	}
	return nil
}

// existing is the body returned for a review version that already has a job.
type existingBody struct {
	Accepted
	Note string `json:"note"`
}

func existing(j job.Job, status *StatusLinks) existingBody {
	return existingBody{
		Accepted: Accepted{JobID: j.ID, Status: string(j.Status), ChangelistID: j.ChangelistID, ReviewVersion: j.ReviewVersion,
			Links: Links{Self: status.Link(j.ID)}},
		Note: "this review version already has a job; nothing new was started",
	}
}

func unavailable(msg string) events.APIGatewayV2HTTPResponse {
	return jsonResponse(http.StatusServiceUnavailable, Problem{Error: "service_unavailable", Message: msg}, map[string]string{"Retry-After": "1"})
}
