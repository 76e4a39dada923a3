package reviewers

import "time"

// Kind is what a webhook said about a reviewer.
type Kind string

const (
	// Requested: asked to review (GitHub review_requested, a reviewer added
	// to a GitLab merge request, Gerrit reviewer-added).
	Requested Kind = "requested"
	// Reviewed: submitted a review (GitHub pull_request_review submitted).
	Reviewed Kind = "reviewed"
	// Removed: no longer asked (GitHub review_request_removed, a reviewer
	// taken off a GitLab merge request, Gerrit reviewer-deleted).
	Removed Kind = "removed"
)

// Event is one thing a webhook said about one reviewer, and when.
type Event struct {
	Username string
	Kind     Kind
	At       time.Time
}

// Mark is what the roster knows of one reviewer: the latest time of each
// kind of event (zero: never seen).
type Mark struct {
	Name      string    `json:"name"` // the username as last spelled
	Requested time.Time `json:"requested,omitzero"`
	Reviewed  time.Time `json:"reviewed,omitzero"`
	Removed   time.Time `json:"removed,omitzero"`
}

// Roster is a changelist's reviewers as its webhooks told them, by
// Key(username).
//
// Keeping the latest time of each kind, rather than a last state, makes
// merging order-free: applying the same events in any order, or one of them
// twice, gives the same roster. Webhooks arrive late, twice and out of
// order (GitHub sends them concurrently), and the store merges concurrent
// writers by re-applying their events (R-REVIEWERS-2).
type Roster map[string]Mark

// Apply merges ev into r and reports whether r changed. Events without a
// username or a time are ignored.
func (r Roster) Apply(ev Event) bool {
	k := Key(ev.Username)
	if k == "" || ev.At.IsZero() {
		return false
	}
	m, ok := r[k]
	at := ev.At.UTC()
	var field *time.Time
	switch ev.Kind {
	case Requested:
		field = &m.Requested
	case Reviewed:
		field = &m.Reviewed
	case Removed:
		field = &m.Removed
	default:
		return false
	}
	if ok && !at.After(*field) {
		return false
	}
	*field = at
	m.Name = ev.Username
	r[k] = m
	return true
}

// RemovedAfter reports whether the reviewer was removed after t.
func (r Roster) RemovedAfter(username string, t time.Time) bool {
	m, ok := r[Key(username)]
	return ok && !m.Removed.IsZero() && m.Removed.After(t)
}
