package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/termtext"
)

// Admin serves the admin API under /admin/: versioned reruns, template
// previews and the reviewer directory. It is for operators, authenticated by one API key
// (CRITICIZER_ADMIN_API_KEY) sent as `Authorization: Bearer <key>` or
// `X-Api-Key: <key>`. Behind API Gateway the admin routes also require
// IAM (SigV4), whose signature travels in the Authorization header, so
// there the key goes in X-Api-Key.
//
// Off unless a key is configured: then every /admin route answers exactly
// what a path without a route answers (404), so a deployment without a key
// does not even reveal that the admin API exists.
type Admin struct {
	// APIKey is the configured key; empty turns the admin API off.
	APIKey string
	// Status mints the job status links a rerun's answer carries.
	Status *StatusLinks
	// Jobs plans and performs reruns: the operator's, kept on DynamoDB
	// alone (dynamo.Jobs), not a part of store.Jobs.
	Jobs  store.Reruns
	Queue Enqueuer
	Log   *slog.Logger
	// Audience decides, for a dry run, whether a recipient would be
	// mailed; nil decides "send" for everyone with an address.
	Audience Audience
	// Previewer renders the mail templates with sample data; nil serves
	// an empty list.
	Previewer Previewer
	// IsUnknownTemplate reports whether Previewer.Preview's error means the
	// name is not a template (mail.ErrUnknownTemplate); nil: only names
	// Previewer.PreviewNames lists are previewed, so an unknown one is a 404
	// before Preview is called.
	IsUnknownTemplate func(error) bool
	// Directory is the reviewer directory /admin/directory manages; nil:
	// no such route.
	Directory DirectoryAdmin
	// Learnings are the team's learnings /admin/learnings lists and
	// decides (R-LEARN-2), proposed at LearnAfter readers; nil: no such
	// route. Now stamps a decision; nil: the clock.
	Learnings  LearningsAdmin
	LearnAfter int
	Now        func() time.Time
}

// Audience decides whether a recipient of a changelist would be mailed:
// DecisionSend, or a reason not to (an unsubscribe, a suppression).
type Audience interface {
	Decide(ctx context.Context, source, changelistID, recipient string) (string, error)
}

// Decisions a dry run reports for each recipient. An Audience may return
// others (e.g. "skipped_unsubscribed").
const (
	DecisionSend           = "send"
	DecisionSkippedNoEmail = "skipped_no_email"
)

// Previewer renders each mail template with sample data (mail.Renderer).
type Previewer interface {
	PreviewNames() []string
	Preview(name string) (contentType string, body []byte, err error)
}

// adminPrefix is the path prefix of every admin route.
const adminPrefix = "/admin/"

// Limits of the rerun request.
const (
	maxAdminBody     = 64 << 10
	maxReasonBytes   = 1000
	maxChangelistLen = 256
)

// on reports whether the admin API is on.
func (a *Admin) on() bool { return a != nil && a.APIKey != "" }

// handle serves one /admin/ request; h answers paths without a route.
func (a *Admin) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest, method, path string) events.APIGatewayV2HTTPResponse {
	if !a.on() {
		return noRoute(method, path)
	}
	header := headerFunc(req.Headers)
	if !a.authorized(header) {
		// Never log what was presented: it may be a key with a typo.
		a.Log.WarnContext(ctx, "admin request refused: missing or wrong API key", "method", method, "path", path)
		return jsonResponse(http.StatusUnauthorized, Problem{Error: "unauthorized", Field: "authorization",
			Message: "send the admin API key as Authorization: Bearer <key> or X-Api-Key: <key>"},
			map[string]string{"WWW-Authenticate": `Bearer realm="criticizer-admin"`})
	}
	switch {
	case path == "/admin/rerun":
		if method != http.MethodPost {
			return methodNotAllowed(http.MethodPost)
		}
		return a.rerun(ctx, req)
	case path == "/admin/previews":
		if method != http.MethodGet {
			return methodNotAllowed(http.MethodGet)
		}
		return a.previews()
	case path == "/admin/directory" || strings.HasPrefix(path, "/admin/directory/"):
		return a.directory(ctx, req, method, path)
	case path == "/admin/learnings" || strings.HasPrefix(path, "/admin/learnings/"):
		return a.learnings(ctx, req, method, path)
	case strings.HasPrefix(path, "/admin/previews/"):
		if method != http.MethodGet {
			return methodNotAllowed(http.MethodGet)
		}
		return a.preview(ctx, strings.TrimPrefix(path, "/admin/previews/"))
	}
	return noRoute(method, path)
}

// noRoute is the answer to a path without a route.
func noRoute(method, path string) events.APIGatewayV2HTTPResponse {
	return problem(http.StatusNotFound, "path", "no route for "+method+" "+quote(path))
}

// authorized checks the presented key(s) against the configured one.
func (a *Admin) authorized(header func(string) string) bool {
	ok := false
	if k := header("X-Api-Key"); k != "" {
		ok = KeyMatches(a.APIKey, k) || ok
	}
	if scheme, token, found := strings.Cut(strings.TrimSpace(header("Authorization")), " "); found && strings.EqualFold(scheme, "Bearer") {
		ok = KeyMatches(a.APIKey, strings.TrimSpace(token)) || ok
	}
	return ok
}

// KeyMatches compares a presented key with the configured one in constant
// time. Both are hashed first: subtle.ConstantTimeCompare returns at once
// when the lengths differ, which would tell a caller the key's length;
// SHA-256 digests are always 32 bytes. An empty configured key matches
// nothing.
func KeyMatches(configured, presented string) bool {
	if configured == "" {
		return false
	}
	want := sha256.Sum256([]byte(configured))
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// RerunRequest is the body of POST /admin/rerun.
type RerunRequest struct {
	Source       string `json:"source"`
	ChangelistID string `json:"changelist_id"`
	// DryRun: create nothing; answer who would be mailed.
	DryRun bool `json:"dry_run"`
	// Reason is why the operator reruns (an incident, a fixed template);
	// kept on the new job (rerun_reason). Required unless DryRun.
	Reason string `json:"reason"`
}

// RerunAccepted is the 202 body of a rerun.
//
// Recipients are masked as in GET /jobs/{id}, although the caller holds the
// admin key: these answers end up in terminals, tickets and CI logs, and
// the masked form (a***@e***.com) is enough to check who is mailed.
// Operators who need full addresses read the rows with the criticizer CLI,
// which runs with AWS credentials and leaves no copy in an HTTP log.
type RerunAccepted struct {
	JobID         job.ID   `json:"job_id"`
	Status        string   `json:"status"`
	Source        string   `json:"source"`
	ChangelistID  string   `json:"changelist_id"`
	ReviewVersion int      `json:"review_version"`
	RerunOf       job.ID   `json:"rerun_of"`
	Recipients    []string `json:"recipients"`
	Links         Links    `json:"links"`
	Note          string   `json:"note,omitempty"`
}

// RerunPreview is the 200 body of a dry run: who a rerun would mail.
// Recipients are masked, as in RerunAccepted.
type RerunPreview struct {
	DryRun        bool   `json:"dry_run"`
	Source        string `json:"source"`
	ChangelistID  string `json:"changelist_id"`
	LatestJobID   job.ID `json:"latest_job_id"`
	LatestVersion int    `json:"latest_version"`
	// LatestStatus is the latest job's status: a rerun of a job still in
	// progress mails its recipients twice, once per version.
	LatestStatus job.Status `json:"latest_status"`
	// ReviewVersion is the version a rerun would take now.
	ReviewVersion int                 `json:"review_version"`
	Recipients    []RecipientDecision `json:"recipients"`
}

// RecipientDecision is one recipient of a dry run and what a rerun would
// do for them.
type RecipientDecision struct {
	Recipient string `json:"recipient"`
	Decision  string `json:"decision"`
}

func (a *Admin) rerun(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body, err := decodeBody(req)
	if err != nil {
		return problem(http.StatusBadRequest, "body", "body is not valid base64")
	}
	if len(body) > maxAdminBody {
		return problem(http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body must be at most %d bytes", maxAdminBody))
	}
	r, field, msg := decodeRerun(body)
	if field != "" {
		return problem(http.StatusBadRequest, field, msg)
	}
	plan, err := a.Jobs.PlanRerun(ctx, r.Source, r.ChangelistID)
	if errors.Is(err, store.ErrNotFound) {
		return problem(http.StatusNotFound, "changelist_id", "no changelist "+quote(r.ChangelistID)+" from source "+quote(r.Source))
	}
	if err != nil {
		a.Log.ErrorContext(ctx, "plan rerun failed", "source", r.Source, "error", err)
		return unavailable("could not read the changelist; retry")
	}
	if r.DryRun {
		return a.dryRun(ctx, r, plan)
	}
	j, err := a.Jobs.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: r.Reason})
	var conflict *store.RerunConflictError
	if errors.As(err, &conflict) {
		return problem(http.StatusConflict, "changelist_id", conflict.Error()+"; nothing new was started, see GET /jobs or rerun again")
	}
	if err != nil {
		a.Log.ErrorContext(ctx, "rerun failed", "source", r.Source, "latest_job_id", plan.Latest.ID, "error", err)
		return unavailable("could not record the rerun; retry")
	}
	log := a.Log.With("job_id", j.ID, "rerun_of", plan.Latest.ID, "source", j.Source, "review_version", j.ReviewVersion)
	out := RerunAccepted{JobID: j.ID, Status: string(j.Status), Source: j.Source, ChangelistID: j.ChangelistID,
		ReviewVersion: j.ReviewVersion, RerunOf: plan.Latest.ID, Recipients: make([]string, 0, len(j.Recipients)),
		Links: Links{Self: a.Status.Link(j.ID)}}
	for _, rcpt := range j.Recipients {
		out.Recipients = append(out.Recipients, MaskEmail(rcpt))
	}
	if err := a.Queue.Enqueue(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}); err != nil {
		// The job is recorded: retrying the request would start yet another
		// version. The sweeper enqueues a job left at accepted.
		log.ErrorContext(ctx, "rerun recorded but not enqueued; the sweeper will start it", "error", err)
		out.Note = "the rerun is recorded but could not be enqueued; the sweeper starts it (CRITICIZER_SWEEP_STUCK_AFTER)"
	} else {
		log.InfoContext(ctx, "versioned rerun accepted")
	}
	return jsonResponse(http.StatusAccepted, out, map[string]string{"Location": a.Status.Link(j.ID)})
}

// dryRun answers who a rerun would mail: the latest version's recipients
// with the Audience's decision, and its reviewers without an address. For
// a code review system's changelist the rerun's fetch asks the system for
// the reviewers again, so its list may differ if they changed since.
func (a *Admin) dryRun(ctx context.Context, r RerunRequest, plan store.RerunPlan) events.APIGatewayV2HTTPResponse {
	out := RerunPreview{DryRun: true, Source: r.Source, ChangelistID: r.ChangelistID, LatestJobID: plan.Latest.ID,
		LatestVersion: plan.Latest.ReviewVersion, LatestStatus: plan.Latest.Status, ReviewVersion: plan.NextVersion,
		Recipients: make([]RecipientDecision, 0, len(plan.Latest.AllRecipients())+len(plan.NoEmailReviewers))}
	for _, rcpt := range plan.Latest.AllRecipients() {
		d := DecisionSend
		if a.Audience != nil {
			var err error
			if d, err = a.Audience.Decide(ctx, r.Source, r.ChangelistID, rcpt); err != nil {
				a.Log.ErrorContext(ctx, "audience decision failed", "latest_job_id", plan.Latest.ID, "error", err)
				return unavailable("could not decide who would be mailed; retry")
			}
		}
		out.Recipients = append(out.Recipients, RecipientDecision{Recipient: MaskEmail(rcpt), Decision: d})
	}
	for _, who := range plan.NoEmailReviewers {
		out.Recipients = append(out.Recipients, RecipientDecision{Recipient: MaskIdentity(who), Decision: DecisionSkippedNoEmail})
	}
	return jsonResponse(http.StatusOK, out, nil)
}

// decodeRerun decodes and validates a rerun body strictly: one JSON object,
// no unknown fields. On failure it returns the field at fault and why.
func decodeRerun(body []byte) (RerunRequest, string, string) {
	var r RerunRequest
	if !utf8.Valid(body) {
		return r, "body", "must be UTF-8 JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		field, msg := jsonError(err)
		return r, field, msg
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r, "body", "must be a single JSON object"
	}
	switch {
	case r.Source == "":
		return r, "source", "is required"
	case !slices.Contains(job.Sources(), r.Source):
		return r, "source", "must be one of " + strings.Join(job.Sources(), ", ")
	case strings.TrimSpace(r.ChangelistID) == "":
		return r, "changelist_id", "is required"
	case len(r.ChangelistID) > maxChangelistLen:
		return r, "changelist_id", fmt.Sprintf("must be at most %d bytes", maxChangelistLen)
	case !r.DryRun && strings.TrimSpace(r.Reason) == "":
		return r, "reason", "is required: say why (it is kept on the new job)"
	case len(r.Reason) > maxReasonBytes:
		return r, "reason", fmt.Sprintf("must be at most %d bytes", maxReasonBytes)
	case termtext.Check(r.ChangelistID) != "":
		// Operators' terminals print both (R-TERM-1).
		return r, "changelist_id", termtext.Check(r.ChangelistID)
	case strings.ContainsAny(r.ChangelistID, "\t\n"):
		return r, "changelist_id", "must be one line without tabs"
	case termtext.Check(r.Reason) != "":
		return r, "reason", termtext.Check(r.Reason)
	}
	r.Reason = strings.TrimSpace(r.Reason)
	return r, "", ""
}

// jsonError names the field a decoding error is about.
func jsonError(err error) (string, string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			return "body", "must be a JSON object"
		}
		return te.Field, "must be a " + te.Type.Kind().String()
	case errors.As(err, &se):
		return "body", fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "body", "malformed JSON: unexpected end of input"
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(f, `"`), "is not a known field"
	}
	return "body", "malformed JSON"
}

// PreviewList is the body of GET /admin/previews.
type PreviewList struct {
	Templates []PreviewLink `json:"templates"`
}

// PreviewLink names a template and where its preview is.
type PreviewLink struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

func (a *Admin) previews() events.APIGatewayV2HTTPResponse {
	out := PreviewList{Templates: []PreviewLink{}}
	if a.Previewer != nil {
		for _, n := range a.Previewer.PreviewNames() {
			out.Templates = append(out.Templates, PreviewLink{Name: n, URL: "/admin/previews/" + escapeSegments(n)})
		}
	}
	return jsonResponse(http.StatusOK, out, map[string]string{"Cache-Control": "no-store"})
}

// escapeSegments escapes each '/'-separated part of a template name, so
// the name's slashes stay path separators.
func escapeSegments(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// previewCSP lets a rendered HTML preview show its inline styles and
// nothing else: no scripts, no requests, in a sandbox.
const previewCSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"

func (a *Admin) preview(ctx context.Context, rawName string) events.APIGatewayV2HTTPResponse {
	name, err := url.PathUnescape(rawName)
	unknown := problem(http.StatusNotFound, "template", "no template "+quote(rawName)+"; GET /admin/previews lists them")
	if err != nil || name == "" || a.Previewer == nil || !slices.Contains(a.Previewer.PreviewNames(), name) {
		return unknown
	}
	ct, body, err := a.Previewer.Preview(name)
	if err != nil {
		if a.IsUnknownTemplate != nil && a.IsUnknownTemplate(err) {
			return unknown
		}
		a.Log.ErrorContext(ctx, "preview failed", "template", name, "error", err)
		return problem(http.StatusInternalServerError, "template", "could not render "+quote(name))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	headers := map[string]string{"Content-Type": ct, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": previewCSP}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Headers: headers, Body: string(body)}
	if !utf8.Valid(body) {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return resp
}
