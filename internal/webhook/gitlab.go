package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// GitLab headers. The Standard Webhooks ones (webhook-*) are sent when the
// hook has a signing token.
const (
	GitLabEventHeader        = "X-Gitlab-Event"
	GitLabTokenHeader        = "X-Gitlab-Token"
	GitLabEventUUIDHeader    = "X-Gitlab-Event-UUID"
	GitLabWebhookUUIDHeader  = "X-Gitlab-Webhook-UUID"
	StandardWebhookID        = "webhook-id"
	StandardWebhookTimestamp = "webhook-timestamp"
	StandardWebhookSignature = "webhook-signature"
)

// DefaultSignatureTolerance is how far a signed GitLab webhook's timestamp
// may be from the clock before it is refused as a possible replay.
const DefaultSignatureTolerance = 5 * time.Minute

// GitLab is the adapter for GitLab merge request webhooks ("Merge Request
// Hook", object_kind merge_request). It reviews the actions open and
// reopen, and update when object_attributes.oldrev is present (new commits
// were pushed); other actions, drafts and merge requests that are not open
// are skipped. An update that takes the merge request out of draft is
// reviewed too.
//
// Authentication, all comparisons in constant time:
//   - Token, when set, must equal the X-Gitlab-Token header;
//   - SigningSecret ("whsec_<base64 key>"), when set, requires a valid
//     Standard Webhooks signature: webhook-signature "v1,<base64 HMAC-SHA256
//     of id.timestamp.body>", with webhook-timestamp within Tolerance of Now
//     (a replayed delivery is refused once it is older than that).
//
// At least one must be configured; when both are, both are checked.
//
// The idempotency key is, for a signed request, its webhook-id (signed,
// so a replay within the timestamp window is the same delivery);
// otherwise the Idempotency-Key header (stable across GitLab's retries),
// else X-Gitlab-Event-UUID, else X-Gitlab-Webhook-UUID: headers the token
// does not cover (Event.KeyUnsigned).
//
// Change.ReviewVersion is 0 (intake assigns one per Event.HeadSHA),
// Change.Recipients is empty (GitLab hooks carry no reviewer e-mail
// addresses; Event.Reviewers holds the usernames), and Change.DiffURL is
// empty: the diff is fetched through the REST API. Change.Author is the
// merge request's author when the hook says who that is, else empty for
// the fetch stage to fill in from the merge request (gitlabAuthor,
// R-SOURCE-1): never the hook's user, who may be someone else.
//
// An update that marks a draft ready (changes.draft true → false) is
// reviewed like an open, though it carries no new commits (R-SOURCE-2).
type GitLab struct {
	Token         []byte
	SigningSecret string
	// Now is the clock for the signature timestamp check; nil means
	// time.Now.
	Now func() time.Time
	// Tolerance bounds the signature timestamp's distance from Now; zero
	// means DefaultSignatureTolerance.
	Tolerance time.Duration
}

type gitlabHook struct {
	ObjectKind *string `json:"object_kind"`
	User       *struct {
		ID       json.RawMessage `json:"id"`
		Username *string         `json:"username"`
	} `json:"user"`
	Project *struct {
		PathWithNamespace *string `json:"path_with_namespace"`
	} `json:"project"`
	ObjectAttributes *gitlabMergeRequest `json:"object_attributes"`
	Reviewers        []gitlabUser        `json:"reviewers"`
	Changes          *struct {
		Reviewers *struct {
			Previous []gitlabUser `json:"previous"`
			Current  []gitlabUser `json:"current"`
		} `json:"reviewers"`
		Draft          *gitlabChange[bool] `json:"draft"`
		WorkInProgress *gitlabChange[bool] `json:"work_in_progress"`
	} `json:"changes"`
}

type gitlabUser struct {
	Username *string `json:"username"`
}

type gitlabMergeRequest struct {
	IID            json.RawMessage `json:"iid"`
	AuthorID       json.RawMessage `json:"author_id"`
	Title          *string         `json:"title"`
	Description    *string         `json:"description"`
	URL            *string         `json:"url"`
	State          *string         `json:"state"`
	Action         *string         `json:"action"`
	Draft          *bool           `json:"draft"`
	WorkInProgress *bool           `json:"work_in_progress"`
	OldRev         *string         `json:"oldrev"`
	UpdatedAt      *string         `json:"updated_at"`
	LastCommit     *struct {
		ID *string `json:"id"`
	} `json:"last_commit"`
}

// Validate reports a configuration that can never authenticate a request:
// no credential at all, or a malformed signing secret. Call it at startup.
func (g GitLab) Validate() error {
	if len(g.Token) == 0 && g.SigningSecret == "" {
		return errors.New("webhook: gitlab needs a token or a signing secret")
	}
	if g.SigningSecret != "" {
		if _, err := standardWebhookKey(g.SigningSecret); err != nil {
			return err
		}
	}
	return nil
}

// Parse verifies and validates a GitLab webhook. A request that needs no
// review yields a *SkipError; ParseEvent says more.
func (g GitLab) Parse(r Request) (Change, error) { return eventChange(g.ParseEvent(r)) }

// ParseEvent verifies and validates a GitLab webhook.
func (g GitLab) ParseEvent(r Request) (Event, error) {
	if len(r.Body) > MaxBody {
		return Event{}, &TooLargeError{Limit: MaxBody}
	}
	header := headerOf(r)
	if err := g.authenticate(header, r.Body); err != nil {
		return Event{}, err
	}
	if kind := header(GitLabEventHeader); kind != "" && kind != "Merge Request Hook" {
		return skipEvent("gitlab", "event not reviewed: "+safeToken(strings.ReplaceAll(kind, " ", "_"))), nil
	}
	if err := requireJSON(header("Content-Type")); err != nil {
		return Event{}, err
	}
	var h gitlabHook
	if err := decodeHookBody(r.Body, &h); err != nil {
		return Event{}, err
	}
	kind, err := requiredText("object_kind", h.ObjectKind, maxID)
	if err != nil {
		return Event{}, err
	}
	if kind != "merge_request" {
		return skipEvent("gitlab", "event not reviewed: "+safeToken(kind)), nil
	}
	mr := h.ObjectAttributes
	if mr == nil {
		return Event{}, &FieldError{Field: "object_attributes", Message: "is required"}
	}
	action, err := requiredText("object_attributes.action", mr.Action, maxID)
	if err != nil {
		return Event{}, err
	}
	// New commits were pushed, or the merge request was marked ready: a
	// review, as if it were opened, though the latter pushed no commit.
	newCode := (mr.OldRev != nil && strings.TrimSpace(*mr.OldRev) != "") || gitlabMarkedReady(h)
	reviewersChanged := h.Changes != nil && h.Changes.Reviewers != nil
	reviewersOnly := false
	switch action {
	case "open", "reopen":
	case "update":
		if !newCode && !reviewersChanged {
			return skipEvent("gitlab", "update without new commits"), nil
		}
		reviewersOnly = !newCode
	default:
		return skipEvent("gitlab", "action not reviewed: "+safeToken(action)), nil
	}
	if mr.State != nil && *mr.State != "opened" {
		return skipEvent("gitlab", "merge request not open"), nil
	}
	if (mr.Draft != nil && *mr.Draft) || (mr.Draft == nil && mr.WorkInProgress != nil && *mr.WorkInProgress) {
		return skipEvent("gitlab", "draft"), nil
	}

	key, keyHeader := header("Idempotency-Key"), "Idempotency-Key"
	if g.SigningSecret != "" {
		// A signed request's webhook-id is covered by its signature: a
		// captured request replayed within the timestamp window is the
		// same delivery, answered as a replay, whatever unsigned headers
		// were changed.
		key, keyHeader = header(StandardWebhookID), StandardWebhookID
	}
	if key == "" {
		key, keyHeader = header(GitLabEventUUIDHeader), GitLabEventUUIDHeader
	}
	if key == "" {
		key, keyHeader = header(GitLabWebhookUUIDHeader), GitLabWebhookUUIDHeader
	}
	if key == "" {
		return Event{}, &FieldError{Field: "Idempotency-Key", Message: "header is required (or X-Gitlab-Event-UUID)"}
	}
	if err := checkKeyHeader(keyHeader, key); err != nil {
		return Event{}, err
	}
	ev := Event{Change: Change{Source: "gitlab", IdempotencyKey: key}, KeyUnsigned: keyHeader != StandardWebhookID}
	if h.Project == nil {
		return Event{}, &FieldError{Field: "project", Message: "is required"}
	}
	if ev.Repo, err = repoPath("project.path_with_namespace", h.Project.PathWithNamespace); err != nil {
		return Event{}, err
	}
	if ev.Number, err = positiveInt("object_attributes.iid", mr.IID); err != nil {
		return Event{}, err
	}
	ev.Change.ChangelistID = ev.Repo + "!" + strconv.Itoa(ev.Number)
	ev.Change.Description = description(mr.Description)
	if ev.Change.Title, err = requiredText("object_attributes.title", mr.Title, maxText); err != nil {
		return Event{}, err
	}
	if ev.Change.URL, err = requiredURL("object_attributes.url", mr.URL); err != nil {
		return Event{}, err
	}
	if h.User == nil {
		return Event{}, &FieldError{Field: "user", Message: "is required"}
	}
	if ev.Change.Author, err = gitlabAuthor(h); err != nil {
		return Event{}, err
	}
	if mr.LastCommit == nil {
		return Event{}, &FieldError{Field: "object_attributes.last_commit", Message: "is required"}
	}
	if ev.HeadSHA, err = commitSHA("object_attributes.last_commit.id", mr.LastCommit.ID); err != nil {
		return Event{}, err
	}
	if mr.OldRev != nil && strings.TrimSpace(*mr.OldRev) != "" && newCode {
		// The head this push replaced: the order of the merge request's
		// heads (R-SOURCE-6).
		if ev.BeforeSHA, err = commitSHA("object_attributes.oldrev", mr.OldRev); err != nil {
			return Event{}, err
		}
		if strings.Trim(ev.BeforeSHA, "0") == "" || ev.BeforeSHA == ev.HeadSHA {
			ev.BeforeSHA = ""
		}
	}
	names := make([]*string, len(h.Reviewers))
	for i := range h.Reviewers {
		names[i] = h.Reviewers[i].Username
		if names[i] == nil {
			return Event{}, &FieldError{Field: "reviewers[" + strconv.Itoa(i) + "].username", Message: "is required"}
		}
	}
	if ev.Reviewers, err = usernames("reviewers", names); err != nil {
		return Event{}, err
	}
	if reviewersChanged && action == "update" {
		if ev.Roster, err = gitlabReviewerChange(h, eventTime(mr.UpdatedAt)); err != nil {
			return Event{}, err
		}
		ev.ReviewersOnly = reviewersOnly
	}
	return ev, nil
}

// gitlabReviewerChange reads changes.reviewers of an update: who is in
// current and not in previous was added, and the other way round removed.
func gitlabReviewerChange(h gitlabHook, at time.Time) (*RosterChange, error) {
	names := func(field string, us []gitlabUser) ([]string, error) {
		ps := make([]*string, len(us))
		for i := range us {
			if ps[i] = us[i].Username; ps[i] == nil {
				return nil, &FieldError{Field: field + "[" + strconv.Itoa(i) + "].username", Message: "is required"}
			}
		}
		return usernames(field, ps)
	}
	prev, err := names("changes.reviewers.previous", h.Changes.Reviewers.Previous)
	if err != nil {
		return nil, err
	}
	cur, err := names("changes.reviewers.current", h.Changes.Reviewers.Current)
	if err != nil {
		return nil, err
	}
	c := &RosterChange{At: at}
	c.Requested = without(cur, prev)
	c.Removed = without(prev, cur)
	return c, nil
}

// without is the members of a not in b, case-insensitively.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || strings.EqualFold(x, y)
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// authenticate applies the configured checks; see GitLab.
func (g GitLab) authenticate(header func(string) string, body []byte) error {
	if len(g.Token) == 0 && g.SigningSecret == "" {
		return &AuthError{Reason: "no webhook token or signing secret is configured"}
	}
	if len(g.Token) > 0 {
		got := header(GitLabTokenHeader)
		if got == "" {
			return &AuthError{Reason: GitLabTokenHeader + " header is missing"}
		}
		if !constantTimeTokenEqual(got, g.Token) {
			return &AuthError{Reason: GitLabTokenHeader + " does not match"}
		}
	}
	if g.SigningSecret != "" {
		now := time.Now
		if g.Now != nil {
			now = g.Now
		}
		tol := g.Tolerance
		if tol <= 0 {
			tol = DefaultSignatureTolerance
		}
		return verifyStandardWebhook(g.SigningSecret, header(StandardWebhookID),
			header(StandardWebhookTimestamp), header(StandardWebhookSignature), body, now(), tol)
	}
	return nil
}

// SignStandardWebhook returns the webhook-signature value ("v1,<base64>")
// for a delivery, as GitLab computes it with a signing token. Tests and
// local tools use it to produce signed requests.
func SignStandardWebhook(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := standardWebhookKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(standardWebhookMAC(key, id, strconv.FormatInt(timestamp, 10), body)), nil
}

// standardWebhookKey decodes a "whsec_<base64>" signing secret.
func standardWebhookKey(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(strings.TrimSpace(secret), "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, errors.New("webhook: signing secret must be whsec_ followed by base64")
	}
	return key, nil
}

func standardWebhookMAC(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// verifyStandardWebhook checks a Standard Webhooks signature: any of the
// space-separated "v1,<base64>" entries may match (senders list several
// while rotating keys); entries of other versions are ignored.
func verifyStandardWebhook(secret, id, timestamp, signature string, body []byte, now time.Time, tol time.Duration) error {
	key, err := standardWebhookKey(secret)
	if err != nil {
		return &AuthError{Reason: "the configured signing secret is malformed"}
	}
	switch {
	case id == "":
		return &AuthError{Reason: StandardWebhookID + " header is missing"}
	case timestamp == "":
		return &AuthError{Reason: StandardWebhookTimestamp + " header is missing"}
	case signature == "":
		return &AuthError{Reason: StandardWebhookSignature + " header is missing"}
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return &AuthError{Reason: StandardWebhookTimestamp + " must be Unix seconds"}
	}
	sent := time.Unix(ts, 0)
	if d := now.Sub(sent); d > tol || d < -tol {
		return &AuthError{Reason: StandardWebhookTimestamp + " is outside the allowed window (replayed or clock skew)"}
	}
	want := standardWebhookMAC(key, id, timestamp, body)
	for entry := range strings.FieldsSeq(signature) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return &AuthError{Reason: StandardWebhookSignature + " does not match the body"}
}
