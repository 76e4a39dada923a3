package api

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

var jobIDPattern = regexp.MustCompile(`^j_[a-z2-7]{32}$`)

// JobView is the body of GET /jobs/{id}. It shows states, never content:
// recipients appear masked (a***@example.com) and rows carry no delivery
// id, so nothing in it lets a reader test a guessed address or login (a
// delivery id is derived from the address). The route needs the link's
// token (StatusLinks), nothing else. Operators see full rows with the
// criticizer CLI.
type JobView struct {
	JobID        job.ID     `json:"job_id"`
	Status       job.Status `json:"status"`
	Stage        job.Stage  `json:"stage"`
	ChangelistID string     `json:"changelist_id"`
	// Repository is the repository the changelist belongs to: a generic
	// caller's repository field, or the part of a code host's changelist
	// id before its number (job.Job.RepositoryName); omitted when neither
	// names one.
	Repository    string         `json:"repository,omitempty"`
	ReviewVersion int            `json:"review_version"`
	Attempts      job.Attempts   `json:"attempts"`
	LastError     *job.Failure   `json:"last_error,omitempty"`
	DeadLetter    *job.Failure   `json:"dead_letter,omitempty"`
	Deliveries    []DeliveryView `json:"deliveries"`
	// UnknownReviewers are the reviewers no directory entry resolved
	// ("<source>:<username>", R-REVIEWERS-3), masked like every identity
	// here; an operator reads them whole in GET /admin/directory's unknown
	// list or with `criticizer jobs show`, and adds them (PUT
	// /admin/directory/…, criticizer directory set).
	UnknownReviewers []string `json:"unknown_reviewers,omitempty"`
	// UnexpandedTeams are requested teams whose members could not be read.
	UnexpandedTeams []string  `json:"unexpanded_teams,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`

	// SettingsWarnings say what was wrong with the repository's
	// .criticizer.yaml, whose review then ran with defaults (R-REPO-2).
	SettingsWarnings []string `json:"settings_warnings,omitempty"`
	// Skipped says why the version was not reviewed (R-REPO-4).
	Skipped string `json:"skipped,omitempty"`
	// SkipReason says why no model ran for a budget_exceeded or
	// no_recipients job (R-BUDGET-1, R-BUDGET-2).
	SkipReason string `json:"skip_reason,omitempty"`
	// TeamMembersNotMailed counts, per requested team, the members past
	// the cap, who were not mailed (R-REVIEWERS-6).
	TeamMembersNotMailed map[string]int `json:"team_members_not_mailed,omitempty"`
}

// DeliveryView is one recipient's delivery state.
type DeliveryView struct {
	Recipient      string          `json:"recipient"`
	Status         delivery.Status `json:"status"`
	Attempts       int             `json:"attempts"`
	NotifiedAt     *time.Time      `json:"notified_at,omitempty"`
	LastErrorClass string          `json:"last_error_class,omitempty"`
	// SkipReason says why a row was settled without a send
	// (R-QUIET-*: "same diff as v2", "v3" for superseded by v3).
	SkipReason string `json:"skip_reason,omitempty"`
}

func (h *Handler) getJob(ctx context.Context, id string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if !jobIDPattern.MatchString(id) {
		return problem(http.StatusNotFound, "job_id", "no job "+quote(id))
	}
	// A job that exists without the right token answers as one that does
	// not: no existence leak. The token is the route's only credential:
	// the admin API key is not looked at here (R-PRIVACY-4), so this
	// public route, which API Gateway lets through without IAM, can
	// neither be opened with it nor be used to test a guess of it.
	if !h.Status.Valid(job.ID(id), req.QueryStringParameters["token"]) {
		return problem(http.StatusNotFound, "job_id", "no job "+quote(id))
	}
	j, err := h.Jobs.Get(ctx, job.ID(id))
	if errors.Is(err, store.ErrNotFound) {
		return problem(http.StatusNotFound, "job_id", "no job "+quote(id))
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "get job failed", "job_id", id, "error", err)
		return unavailable("could not read the job")
	}
	v, err := h.view(ctx, j)
	if err != nil {
		h.Log.ErrorContext(ctx, "get deliveries failed", "job_id", id, "error", err)
		return unavailable("could not read the job's deliveries")
	}
	return jsonResponse(http.StatusOK, v, nil)
}

// view builds the job view. Delivery ids are derived, not indexed: the job
// knows its recipients (and, for code review systems, the reviewers it
// found no address for), so one BatchGetItem finds every row.
func (h *Handler) view(ctx context.Context, j job.Job) (JobView, error) {
	v := JobView{JobID: j.ID, Status: j.Status, Stage: j.Stage, ChangelistID: j.ChangelistID, Repository: j.RepositoryName(), ReviewVersion: j.ReviewVersion,
		Attempts: j.Attempts, LastError: j.LastError, DeadLetter: j.DeadLetter, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		Deliveries: []DeliveryView{}, UnexpandedTeams: j.UnexpandedTeams,
		SkipReason: j.SkipReason, TeamMembersNotMailed: j.TeamMembersNotMailed}
	v.SettingsWarnings, v.Skipped = j.SettingsWarnings, j.Skipped
	if v.Attempts == nil {
		v.Attempts = job.Attempts{}
	}
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	type entry struct{ id, shown string }
	recipients := j.AllRecipients()
	entries := make([]entry, 0, len(recipients))
	for _, r := range recipients {
		entries = append(entries, entry{delivery.ID(clKey, r, j.ReviewVersion), MaskEmail(r)})
	}
	if j.Source != "generic" {
		identities, err := h.Jobs.NoEmailReviewers(ctx, j.ID)
		if err != nil {
			return JobView{}, err
		}
		for _, who := range identities {
			entries = append(entries, entry{delivery.ID(clKey, who, j.ReviewVersion), MaskIdentity(who)})
			v.UnknownReviewers = append(v.UnknownReviewers, MaskIdentity(who))
		}
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.id
	}
	rows, err := h.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return JobView{}, err
	}
	byID := make(map[string]delivery.Row, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, e := range entries {
		dv := DeliveryView{Recipient: e.shown, Status: "not_created"}
		if r, ok := byID[e.id]; ok {
			dv.Status, dv.Attempts, dv.LastErrorClass, dv.SkipReason = r.Status, r.Attempts, r.LastErrorClass, r.SkipReason
			if !r.NotifiedAt.IsZero() {
				t := r.NotifiedAt
				dv.NotifiedAt = &t
			}
		}
		v.Deliveries = append(v.Deliveries, dv)
	}
	return v, nil
}

// MaskIdentity masks a "<source>:<username>" reviewer identity like an
// address: the source and the first character of the username.
func MaskIdentity(id string) string {
	src, user, ok := strings.Cut(id, ":")
	if !ok || user == "" {
		return "***"
	}
	return src + ":" + string([]rune(user)[:1]) + "***"
}

// MaskEmail keeps the first character of the local part and of the
// domain, and the domain's last label ("a***@e***.com"): enough for a
// reviewer to recognise their row, not enough to read an address or to
// test a guess (a company's domain narrows a guess too much to show).
// Characters, not bytes: an address may be non-ASCII (R-PRIVACY-1).
func MaskEmail(addr string) string {
	local, domain, ok := strings.Cut(addr, "@")
	if !ok || local == "" || domain == "" {
		return "***"
	}
	masked := string([]rune(local)[:1]) + "***@" + string([]rune(domain)[:1]) + "***"
	if i := strings.LastIndexByte(domain, '.'); i > 0 && i < len(domain)-1 {
		masked += domain[i:]
	}
	return masked
}
