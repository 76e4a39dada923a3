package webhook

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Gerrit token headers. The webhooks plugin signs nothing and sends no
// header of its choosing (a remote's settings are its URL, event types,
// timeouts and retries), so the shared secret travels in the hook's URL:
// it ends in ?token=<secret>, and the HTTP front end copies that query
// parameter into the X-Criticizer-Query-Token pseudo-header (Request has no
// URL). X-Criticizer-Token is for other senders that can set a header (a
// relay, a stream-events forwarder, a test). A client cannot usefully send
// the pseudo-header itself: it is checked the same way.
const (
	GerritTokenHeader      = "X-Criticizer-Token"
	GerritQueryTokenHeader = "X-Criticizer-Query-Token"
)

// Gerrit is the adapter for Gerrit's webhooks plugin, which POSTs
// stream-events JSON. It reviews patchset-created events of open (NEW),
// non-work-in-progress changes whose patch set changes code; every other
// event type is skipped, as are patch sets of kind NO_CODE_CHANGE or
// NO_CHANGE (a new commit message or an identical tree: the diff is the one
// already reviewed).
//
// Change.ReviewVersion is the patch set number; the idempotency key is
// "<Change-Id>~<change number>~<patch set>~patchset-created" (the Change-Id
// alone is shared by cherry-picks on other branches). Change.ChangelistID is
// "<project>~<change number>", which is also the REST API's change id.
// Gerrit events name no reviewers: Event.Reviewers and Change.Recipients are
// empty, and the fetch stage asks the REST API. Change.Author is the owner's
// username (or display name), never an e-mail address.
type Gerrit struct {
	Token []byte
}

type gerritEvent struct {
	Type   *string `json:"type"`
	Change *struct {
		Project *string         `json:"project"`
		Number  json.RawMessage `json:"number"`
		ID      *string         `json:"id"`
		Subject *string         `json:"subject"`
		// CommitMessage is the change's description (the subject line
		// first).
		CommitMessage *string        `json:"commitMessage"`
		URL           *string        `json:"url"`
		Status        *string        `json:"status"`
		WIP           *bool          `json:"wip"`
		Owner         *gerritAccount `json:"owner"`
	} `json:"change"`
	PatchSet *struct {
		Number   json.RawMessage `json:"number"`
		Revision *string         `json:"revision"`
		Kind     *string         `json:"kind"`
	} `json:"patchSet"`
	// reviewer-added and reviewer-deleted.
	Reviewer       *gerritAccount  `json:"reviewer"`
	EventCreatedOn json.RawMessage `json:"eventCreatedOn"`
}

type gerritAccount struct {
	Name     *string `json:"name"`
	Username *string `json:"username"`
	Email    *string `json:"email"`
}

// Parse verifies and validates a Gerrit webhook. A request that needs no
// review yields a *SkipError; ParseEvent says more.
func (g Gerrit) Parse(r Request) (Change, error) { return eventChange(g.ParseEvent(r)) }

// ParseEvent verifies and validates a Gerrit webhook.
func (g Gerrit) ParseEvent(r Request) (Event, error) {
	if len(r.Body) > MaxBody {
		return Event{}, &TooLargeError{Limit: MaxBody}
	}
	header := headerOf(r)
	if err := g.authenticate(header); err != nil {
		return Event{}, err
	}
	if err := requireJSON(header("Content-Type")); err != nil {
		return Event{}, err
	}
	var e gerritEvent
	if err := decodeHookBody(r.Body, &e); err != nil {
		return Event{}, err
	}
	kind, err := requiredText("type", e.Type, maxID)
	if err != nil {
		return Event{}, err
	}
	reviewerEvent := kind == "reviewer-added" || kind == "reviewer-deleted"
	if kind != "patchset-created" && !reviewerEvent {
		return skipEvent("gerrit", "event not reviewed: "+safeToken(kind)), nil
	}
	c, ps := e.Change, e.PatchSet
	if c == nil {
		return Event{}, &FieldError{Field: "change", Message: "is required"}
	}
	if ps == nil {
		return Event{}, &FieldError{Field: "patchSet", Message: "is required"}
	}
	if c.Status != nil && *c.Status != "NEW" {
		return skipEvent("gerrit", "change not open"), nil
	}
	if c.WIP != nil && *c.WIP {
		return skipEvent("gerrit", "work in progress"), nil
	}
	noCodeChange := ps.Kind != nil && (*ps.Kind == "NO_CODE_CHANGE" || *ps.Kind == "NO_CHANGE")
	if noCodeChange && !reviewerEvent {
		return skipEvent("gerrit", "patch set without code change"), nil
	}

	ev := Event{Change: Change{Source: "gerrit"}}
	if ev.Repo, err = repoPath("change.project", c.Project); err != nil {
		return Event{}, err
	}
	if ev.Number, err = positiveInt("change.number", unquoteNumber(c.Number)); err != nil {
		return Event{}, err
	}
	if ev.Patchset, err = positiveInt("patchSet.number", unquoteNumber(ps.Number)); err != nil {
		return Event{}, err
	}
	ev.Change.ReviewVersion = ev.Patchset
	changeID, err := requiredText("change.id", c.ID, 64)
	if err != nil {
		return Event{}, err
	}
	ev.Change.IdempotencyKey = changeID + "~" + strconv.Itoa(ev.Number) + "~" + strconv.Itoa(ev.Patchset) + "~" + kind
	if err := checkKeyHeader("change.id", ev.Change.IdempotencyKey); err != nil {
		return Event{}, err
	}
	ev.Change.ChangelistID = ev.Repo + "~" + strconv.Itoa(ev.Number)
	ev.Change.Description = description(c.CommitMessage)
	if ev.Change.Title, err = requiredText("change.subject", c.Subject, maxText); err != nil {
		return Event{}, err
	}
	if ev.Change.URL, err = requiredURL("change.url", c.URL); err != nil {
		return Event{}, err
	}
	if c.Owner == nil {
		return Event{}, &FieldError{Field: "change.owner", Message: "is required"}
	}
	switch {
	case c.Owner.Username != nil:
		ev.Change.Author, err = username("change.owner.username", c.Owner.Username)
	case c.Owner.Name != nil:
		ev.Change.Author, err = requiredText("change.owner.name", c.Owner.Name, maxText)
		if err == nil && strings.Contains(ev.Change.Author, "@") {
			err = &FieldError{Field: "change.owner.name", Message: "must not be an e-mail address"}
		}
	default:
		err = &FieldError{Field: "change.owner.username", Message: "is required"}
	}
	if err != nil {
		return Event{}, err
	}
	if ev.HeadSHA, err = commitSHA("patchSet.revision", ps.Revision); err != nil {
		return Event{}, err
	}
	ev.Reviewers = []string{}
	if reviewerEvent {
		if ev.Roster, err = gerritReviewer(e, kind); err != nil {
			return Event{}, err
		}
		ev.ReviewersOnly, ev.NoCodeChange = true, noCodeChange
		ev.Change.IdempotencyKey += "~" + strconv.FormatInt(ev.Roster.At.Unix(), 10)
	}
	return ev, nil
}

// gerritReviewer reads reviewer-added and reviewer-deleted. Gerrit names
// an account by username, or only by address: such a reviewer is not in
// the roster (keyed by username), but an addition still has the fetch
// stage ask the REST API again, which lists them with their address.
func gerritReviewer(e gerritEvent, kind string) (*RosterChange, error) {
	if e.Reviewer == nil {
		return nil, &FieldError{Field: "reviewer", Message: "is required"}
	}
	c := &RosterChange{At: unixSeconds(e.EventCreatedOn)}
	var names []string
	if e.Reviewer.Username != nil {
		u, err := username("reviewer.username", e.Reviewer.Username)
		if err != nil {
			return nil, err
		}
		names = []string{u}
	}
	if kind == "reviewer-added" {
		c.Requested, c.AddedUnnamed = names, len(names) == 0
	} else {
		c.Removed = names
	}
	return c, nil
}

func (g Gerrit) authenticate(header func(string) string) error {
	if len(g.Token) == 0 {
		return &AuthError{Reason: "no webhook token is configured"}
	}
	presented := 0
	for _, name := range []string{GerritTokenHeader, GerritQueryTokenHeader} {
		got := header(name)
		if got == "" {
			continue
		}
		presented++
		if !constantTimeTokenEqual(got, g.Token) {
			return &AuthError{Reason: "token does not match"}
		}
	}
	if presented == 0 {
		return &AuthError{Reason: "token is missing (" + GerritTokenHeader + " header or ?token= query parameter)"}
	}
	return nil
}

// unquoteNumber accepts a number sent as a JSON string, as Gerrit before
// 3.x did ("number":"56"), alongside a plain JSON number.
func unquoteNumber(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		return t[1 : len(t)-1]
	}
	return raw
}
