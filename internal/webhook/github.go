package webhook

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Event is what a source adapter (GitHub, GitLab, Gerrit) extracts from a
// webhook: the Change plus what intake and the fetch stage need and the
// Change struct has no room for.
//
// When Skip is non-empty the request was authentic and well-formed but asks
// for no review (a ping, a draft, a closed pull request, an event type that
// is not reviewed...): the caller acknowledges it with a 2xx and creates no
// job. Skip is a short, stable, ASCII phrase fit for a response body and a
// metric label; the other fields are then best effort and may be empty.
type Event struct {
	Change Change

	// Repo names the repository or project in the source's own terms:
	// "owner/repo" on GitHub (the upstream: the pull request's base
	// repository, never a fork's), the project's path_with_namespace on
	// GitLab (the hook's project: the merge request's target, never the
	// source project of a fork), the project name on Gerrit.
	// source.Ref.Repo takes it as is; the repository's settings are read
	// there (R-REPO-6).
	Repo string
	// Number is the pull request number, merge request iid or Gerrit change
	// number.
	Number int
	// HeadSHA is the commit under review (the pull request head, the merge
	// request's last commit, the patch set revision).
	HeadSHA string
	// BaseSHA is the base commit the event names, when it names one
	// (GitHub's pull_request.base.sha): the diff is of HeadSHA against
	// it, and the repository's settings are read there (R-SOURCE-5).
	// GitLab's hooks name none (the fetch stage takes the merge request
	// version's), nor do Gerrit's (the fetch stage takes the destination
	// branch's tip, never the patch set's parent).
	BaseSHA string
	// BeforeSHA is the head the change had just before HeadSHA, when the
	// event says so: GitHub's synchronize `before` (its `after` being the
	// pull request's head), GitLab's `object_attributes.oldrev`. Intake
	// orders the change's heads by it (R-SOURCE-6); empty for opens,
	// reopens and other events, and for Gerrit, whose patch set numbers
	// are the order.
	BeforeSHA string
	// Patchset is the Gerrit patch set number (also Change.ReviewVersion);
	// 0 for the other sources.
	Patchset int
	// Reviewers are the usernames the payload names as reviewers. Webhook
	// payloads carry no reviewer e-mail addresses: a directory resolves
	// them later. Gerrit payloads name none; fetch asks the REST API.
	Reviewers []string
	// Skip, when non-empty, says why no review is needed.
	Skip string
	// Roster, when set, is what the event says about who reviews the
	// changelist. With ReviewersOnly the event changes reviewers and no
	// code (a reviewer requested or removed, a review submitted): intake
	// records it and adds a newly requested reviewer to the version being
	// reviewed, rather than starting a review.
	Roster        *RosterChange
	ReviewersOnly bool
	// NoCodeChange: the event's version has the code of the version
	// before it (a Gerrit patch set that changed only the commit message):
	// a reviewer added there is added to the latest reviewed version.
	NoCodeChange bool
	// KeyUnsigned: Change.IdempotencyKey is a header the source's
	// authentication does not cover (GitHub's X-GitHub-Delivery; GitLab's
	// Idempotency-Key or event UUID without a signing secret), so a
	// captured request can be replayed under any key. Intake remembers
	// such a reviewer event by its body as well (R-BUDGET-3).
	KeyUnsigned bool
}

// SkipError is what an adapter's Parse returns for an authentic request that
// needs no review (Event.Skip). The caller should answer it with a 2xx, not
// an error status; ParseEvent reports the same thing without an error.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "no review needed: " + e.Reason }

// eventChange turns ParseEvent's result into Parse's. An event that
// changes only who reviews (ReviewersOnly) asks for no review of its own:
// Parse, which has no room for the roster, reports it as a *SkipError
// rather than a Change a caller would review (R-SOURCE-3).
func eventChange(ev Event, err error) (Change, error) {
	if err != nil {
		return Change{}, err
	}
	if ev.Skip != "" {
		return Change{}, &SkipError{Reason: ev.Skip}
	}
	if ev.ReviewersOnly {
		return Change{}, &SkipError{Reason: ReviewersOnlyReason}
	}
	return ev.Change, nil
}

// ReviewersOnlyReason is the *SkipError reason Parse gives an event that
// changes only a changelist's reviewers; ParseEvent reports its roster.
const ReviewersOnlyReason = "reviewers changed"

// GitHub headers.
const (
	GitHubEventHeader     = "X-GitHub-Event"
	GitHubDeliveryHeader  = "X-GitHub-Delivery"
	GitHubSignatureHeader = "X-Hub-Signature-256"
)

// GitHub is the adapter for GitHub (and GitHub Enterprise Server) webhooks.
// It reviews pull_request events whose action is opened, synchronize,
// reopened or ready_for_review, on open, non-draft pull requests. On those
// pull requests it also reads who reviews (Event.Roster, ReviewersOnly):
// pull_request review_requested and review_request_removed (a user, or a
// team), and pull_request_review submitted.
//
// The request is authenticated by X-Hub-Signature-256, an HMAC-SHA256 of the
// raw body under Secret, compared in constant time before anything else is
// looked at. X-GitHub-Delivery (a GUID, the same on a redelivery) is the
// idempotency key; the signature does not cover it (Event.KeyUnsigned).
//
// GitHub payloads carry no review version and no reviewer e-mail addresses:
// Change.ReviewVersion is 0 (intake assigns one per Event.HeadSHA) and
// Change.Recipients is empty (Event.Reviewers holds the logins).
type GitHub struct {
	Secret []byte
}

// githubActions are the pull_request actions that put new code up for review.
var githubActions = map[string]bool{
	"opened":           true,
	"synchronize":      true,
	"reopened":         true,
	"ready_for_review": true,
}

type githubHook struct {
	Action *string `json:"action"`
	// Before and After are a synchronize's previous and new head: the
	// order of the pull request's heads (R-SOURCE-6).
	Before      *string            `json:"before"`
	After       *string            `json:"after"`
	PullRequest *githubPullRequest `json:"pull_request"`
	Repository  *struct {
		FullName *string `json:"full_name"`
	} `json:"repository"`
	// review_requested and review_request_removed name a user or a team.
	RequestedReviewer *struct {
		Login *string `json:"login"`
	} `json:"requested_reviewer"`
	RequestedTeam *struct {
		Slug *string `json:"slug"`
	} `json:"requested_team"`
	// pull_request_review.
	Review *struct {
		User *struct {
			Login *string `json:"login"`
		} `json:"user"`
		SubmittedAt *string `json:"submitted_at"`
	} `json:"review"`
}

type githubPullRequest struct {
	Number  json.RawMessage `json:"number"`
	State   *string         `json:"state"`
	Draft   *bool           `json:"draft"`
	Title   *string         `json:"title"`
	Body    *string         `json:"body"`
	HTMLURL *string         `json:"html_url"`
	DiffURL *string         `json:"diff_url"`
	User    *struct {
		Login *string `json:"login"`
	} `json:"user"`
	Head *struct {
		SHA *string `json:"sha"`
	} `json:"head"`
	// Base is the base branch's commit the event names: the repository's
	// settings are read there, never at the head (R-SOURCE-5), in the
	// repository the pull request asks to merge into (base.repo, the
	// upstream), never the head's, which on a pull request from a fork
	// is the author's own (R-REPO-6).
	Base *struct {
		SHA  *string `json:"sha"`
		Repo *struct {
			FullName *string `json:"full_name"`
		} `json:"repo"`
	} `json:"base"`
	UpdatedAt *string `json:"updated_at"`
	// Users have a login; teams (which may also be requested) have a slug
	// and no login, and are not individual recipients.
	RequestedReviewers []struct {
		Login *string `json:"login"`
	} `json:"requested_reviewers"`
}

// Parse verifies and validates a GitHub webhook. A request that needs no
// review yields a *SkipError; ParseEvent says more.
func (g GitHub) Parse(r Request) (Change, error) { return eventChange(g.ParseEvent(r)) }

// ParseEvent verifies and validates a GitHub webhook.
func (g GitHub) ParseEvent(r Request) (Event, error) {
	if len(r.Body) > MaxBody {
		return Event{}, &TooLargeError{Limit: MaxBody}
	}
	header := headerOf(r)
	if err := verifySHA256(g.Secret, header(GitHubSignatureHeader), r.Body); err != nil {
		return Event{}, err
	}
	kind := header(GitHubEventHeader)
	switch {
	case kind == "":
		return Event{}, &FieldError{Field: GitHubEventHeader, Message: "header is required"}
	case kind == "ping":
		return skipEvent("github", "ping"), nil
	case kind != "pull_request" && kind != "pull_request_review":
		return skipEvent("github", "event not reviewed: "+safeToken(kind)), nil
	}
	if err := requireJSON(header("Content-Type")); err != nil {
		return Event{}, err
	}
	var h githubHook
	if err := decodeHookBody(r.Body, &h); err != nil {
		return Event{}, err
	}
	action, err := requiredText("action", h.Action, maxID)
	if err != nil {
		return Event{}, err
	}
	if kind == "pull_request_review" {
		return githubReview(h, action)
	}
	roster := action == "review_requested" || action == "review_request_removed"
	if !githubActions[action] && !roster {
		return skipEvent("github", "action not reviewed: "+safeToken(action)), nil
	}
	pr := h.PullRequest
	if pr == nil {
		return Event{}, &FieldError{Field: "pull_request", Message: "is required"}
	}
	if pr.State != nil && *pr.State != "open" {
		return skipEvent("github", "pull request not open"), nil
	}
	if pr.Draft != nil && *pr.Draft {
		return skipEvent("github", "draft"), nil
	}

	key := header(GitHubDeliveryHeader)
	if err := checkKeyHeader(GitHubDeliveryHeader, key); err != nil {
		return Event{}, err
	}
	ev, err := githubChangelist(h)
	if err != nil {
		return Event{}, err
	}
	ev.Change.IdempotencyKey, ev.KeyUnsigned = key, true
	ev.Change.Description = description(pr.Body)
	if ev.Change.Title, err = requiredText("pull_request.title", pr.Title, maxText); err != nil {
		return Event{}, err
	}
	if ev.Change.URL, err = requiredURL("pull_request.html_url", pr.HTMLURL); err != nil {
		return Event{}, err
	}
	if ev.Change.DiffURL, err = requiredURL("pull_request.diff_url", pr.DiffURL); err != nil {
		return Event{}, err
	}
	if pr.User == nil {
		return Event{}, &FieldError{Field: "pull_request.user", Message: "is required"}
	}
	if ev.Change.Author, err = username("pull_request.user.login", pr.User.Login); err != nil {
		return Event{}, err
	}
	if pr.Head == nil {
		return Event{}, &FieldError{Field: "pull_request.head", Message: "is required"}
	}
	if ev.HeadSHA, err = commitSHA("pull_request.head.sha", pr.Head.SHA); err != nil {
		return Event{}, err
	}
	if pr.Base != nil && pr.Base.Repo != nil && pr.Base.Repo.FullName != nil && !strings.EqualFold(*pr.Base.Repo.FullName, ev.Repo) {
		// The repository the event is for (Event.Repo, where the diff,
		// the reviewers and the settings are read) is the one the pull
		// request merges into: GitHub sends pull_request events to the
		// base repository. Anything else would read another
		// repository's files as this one's settings.
		return Event{}, &FieldError{Field: "pull_request.base.repo.full_name", Message: "must be the repository the event is for (repository.full_name)"}
	}
	if ev.BeforeSHA, err = githubBefore(h, action, ev.HeadSHA); err != nil {
		return Event{}, err
	}
	if pr.Base != nil && pr.Base.SHA != nil {
		// GitHub always sends it; without it the fetch stage asks the
		// pull request for its base.
		if ev.BaseSHA, err = commitSHA("pull_request.base.sha", pr.Base.SHA); err != nil {
			return Event{}, err
		}
	}
	logins := make([]*string, 0, len(pr.RequestedReviewers))
	for _, rr := range pr.RequestedReviewers {
		if rr.Login != nil { // a team: no login
			logins = append(logins, rr.Login)
		}
	}
	if ev.Reviewers, err = usernames("pull_request.requested_reviewers", logins); err != nil {
		return Event{}, err
	}
	if roster {
		if ev.Roster, err = githubRequest(h, action, eventTime(pr.UpdatedAt)); err != nil {
			return Event{}, err
		}
		ev.ReviewersOnly = true
	}
	return ev, nil
}

// githubBefore is a synchronize's `before`: the head the pull request had
// until this push (R-SOURCE-6). It counts only when the event's `after`
// is the pull request's head, as GitHub always sends it; a payload whose
// two disagree says nothing of the order. An all-zero `before` (no
// previous head) is none.
func githubBefore(h githubHook, action, head string) (string, error) {
	if action != "synchronize" || h.Before == nil || h.After == nil || !strings.EqualFold(strings.TrimSpace(*h.After), head) {
		return "", nil
	}
	before, err := commitSHA("before", h.Before)
	if err != nil || strings.Trim(before, "0") == "" {
		return "", err
	}
	return before, nil
}

// githubChangelist reads which pull request an event is about: its
// repository and number, and the changelist id they make.
func githubChangelist(h githubHook) (Event, error) {
	ev := Event{Change: Change{Source: "github"}}
	var err error
	if h.Repository == nil {
		return Event{}, &FieldError{Field: "repository", Message: "is required"}
	}
	if ev.Repo, err = repoPath("repository.full_name", h.Repository.FullName); err != nil {
		return Event{}, err
	}
	if ev.Number, err = positiveInt("pull_request.number", h.PullRequest.Number); err != nil {
		return Event{}, err
	}
	ev.Change.ChangelistID = ev.Repo + "#" + strconv.Itoa(ev.Number)
	return ev, nil
}

// githubRequest reads review_requested and review_request_removed: a user
// (requested_reviewer) or a team (requested_team).
func githubRequest(h githubHook, action string, at time.Time) (*RosterChange, error) {
	c := &RosterChange{At: at}
	switch {
	case h.RequestedReviewer != nil:
		u, err := username("requested_reviewer.login", h.RequestedReviewer.Login)
		if err != nil {
			return nil, err
		}
		if action == "review_requested" {
			c.Requested = []string{u}
		} else {
			c.Removed = []string{u}
		}
	case h.RequestedTeam != nil:
		slug, err := username("requested_team.slug", h.RequestedTeam.Slug)
		if err != nil {
			return nil, err
		}
		if action == "review_requested" {
			c.Teams = []string{slug}
		}
		// A team taken off: GitHub no longer lists it, and its members
		// drop out of the next version unless they reviewed.
	default:
		return nil, &FieldError{Field: "requested_reviewer", Message: "is required (or requested_team)"}
	}
	return c, nil
}

// githubReview reads pull_request_review: a submitted review makes its
// author one who reviewed. It changes no code and mails nobody now; the
// reviewer gets the next versions (R-REVIEWERS-2).
func githubReview(h githubHook, action string) (Event, error) {
	if action != "submitted" {
		return skipEvent("github", "review action not used: "+safeToken(action)), nil
	}
	pr := h.PullRequest
	if pr == nil {
		return Event{}, &FieldError{Field: "pull_request", Message: "is required"}
	}
	if pr.State != nil && *pr.State != "open" {
		return skipEvent("github", "pull request not open"), nil
	}
	ev, err := githubChangelist(h)
	if err != nil {
		return Event{}, err
	}
	ev.ReviewersOnly = true
	if h.Review == nil || h.Review.User == nil {
		return Event{}, &FieldError{Field: "review.user", Message: "is required"}
	}
	who, err := username("review.user.login", h.Review.User.Login)
	if err != nil {
		return Event{}, err
	}
	ev.Roster = &RosterChange{Reviewed: []string{who}, At: eventTime(h.Review.SubmittedAt)}
	return ev, nil
}

// headerOf returns r's header lookup, tolerating a nil func.
func headerOf(r Request) func(string) string {
	if r.Header == nil {
		return func(string) string { return "" }
	}
	return r.Header
}

func skipEvent(source, reason string) Event {
	return Event{Change: Change{Source: source}, Skip: reason}
}

// safeToken makes an attacker-chosen word (an event or action name) fit to
// echo in a Skip reason: short printable ASCII, or "other".
func safeToken(s string) string {
	if s == "" || len(s) > 64 || strings.IndexFunc(s, func(r rune) bool { return r <= 0x20 || r >= 0x7f }) >= 0 {
		return "other"
	}
	return s
}

// requireJSON rejects form-encoded deliveries, which GitHub sends when a
// hook is configured with content type application/x-www-form-urlencoded.
// A missing Content-Type is accepted: the body decides.
func requireJSON(contentType string) error {
	if contentType == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return &FieldError{Field: "Content-Type", Message: "must be application/json (configure the webhook to send JSON)"}
	}
	return nil
}

// decodeHookBody decodes a single JSON object, ignoring unknown fields
// (webhook payloads grow new fields all the time) and naming the JSON path
// of a type error.
func decodeHookBody(body []byte, v any) error {
	// encoding/json would silently replace invalid UTF-8 with U+FFFD.
	if !utf8.Valid(body) {
		return &FieldError{Field: "body", Message: "must be UTF-8 text"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Field: "body", Message: "must be a single JSON object"}
	}
	return nil
}

// checkKeyHeader is checkIdempotencyKey for a source-specific header.
func checkKeyHeader(name, key string) error {
	if err := checkIdempotencyKey(key); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return &FieldError{Field: name, Message: fe.Message}
		}
		return err
	}
	return nil
}

func requiredURL(field string, v *string) (string, error) {
	if v == nil {
		return "", &FieldError{Field: field, Message: "is required"}
	}
	return httpURL(field, *v)
}

// repoPath validates "owner/repo"-style names: GitHub full names, GitLab
// namespaced paths, Gerrit project names.
func repoPath(field string, v *string) (string, error) {
	s, err := requiredText(field, v, maxID)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(s, " \t#!~?") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//") {
		return "", &FieldError{Field: field, Message: "is not a valid repository path"}
	}
	return s, nil
}

// username validates a login: printable, no spaces, no "@" (so that an
// e-mail address is never mistaken for one).
func username(field string, v *string) (string, error) {
	s, err := requiredText(field, v, maxID)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(s, " \t@,<>\"") {
		return "", &FieldError{Field: field, Message: "is not a valid username"}
	}
	return s, nil
}

// usernames validates and de-duplicates (case-insensitively, keeping the
// first spelling) a list of logins. Nil entries are skipped.
func usernames(field string, in []*string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for i, v := range in {
		if v == nil {
			continue
		}
		u, err := username(fmt.Sprintf("%s[%d]", field, i), v)
		if err != nil {
			return nil, err
		}
		if k := strings.ToLower(u); !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	if len(out) > MaxRecipients {
		return nil, &FieldError{Field: field, Message: fmt.Sprintf("at most %d reviewers", MaxRecipients)}
	}
	return out, nil
}

// commitSHA validates a full SHA-1 or SHA-256 object name in hex.
func commitSHA(field string, v *string) (string, error) {
	if v == nil {
		return "", &FieldError{Field: field, Message: "is required"}
	}
	s := strings.ToLower(strings.TrimSpace(*v))
	if len(s) != 40 && len(s) != 64 {
		return "", &FieldError{Field: field, Message: "must be a full commit SHA (40 or 64 hex digits)"}
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return "", &FieldError{Field: field, Message: "must be a full commit SHA (40 or 64 hex digits)"}
		}
	}
	return s, nil
}

// constantTimeTokenEqual compares a presented shared secret with the
// configured one without leaking, through timing, where they differ or how
// long the configured one is (both are hashed to a fixed length first).
func constantTimeTokenEqual(got string, want []byte) bool {
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256(want)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
