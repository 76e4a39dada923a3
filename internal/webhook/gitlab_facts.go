package webhook

import (
	"bytes"
	"encoding/json"
)

// gitlabChange is one attribute of a merge request hook's `changes`: its
// value before and after the event.
type gitlabChange[T any] struct {
	Previous *T `json:"previous"`
	Current  *T `json:"current"`
}

// gitlabMarkedReady reports an update that took the merge request out of
// draft: changes.draft (or, before GitLab 14, changes.work_in_progress)
// went from true to false. Marking a merge request ready pushes no commit
// (oldrev is absent), yet it is the moment its author asks for review, as
// GitHub's ready_for_review is (R-SOURCE-2).
func gitlabMarkedReady(h gitlabHook) bool {
	if h.Changes == nil {
		return false
	}
	left := func(c *gitlabChange[bool]) bool {
		return c != nil && c.Previous != nil && *c.Previous && c.Current != nil && !*c.Current
	}
	return left(h.Changes.Draft) || (h.Changes.Draft == nil && left(h.Changes.WorkInProgress))
}

// gitlabAuthor is the merge request's author's username, when the hook
// says it (R-SOURCE-1).
//
// A merge request hook names its author only by id
// (object_attributes.author_id); the one account it names in full is
// `user`, whoever triggered the event: the author opening or pushing, but
// just as well a maintainer reopening, marking ready or editing someone
// else's merge request. So the author is user.username only when user.id
// is author_id; otherwise it is left empty here and the fetch stage takes
// it from the merge request itself (GET /projects/:id/merge_requests/:iid,
// source.Reviewers.Author), before the model's prompt or any e-mail's "by"
// line is written. It is never taken from `user` alone.
func gitlabAuthor(h gitlabHook) (string, error) {
	if h.User == nil || h.ObjectAttributes == nil {
		return "", nil
	}
	uid, aid := bytes.TrimSpace(h.User.ID), bytes.TrimSpace(h.ObjectAttributes.AuthorID)
	if !gitlabSameID(uid, aid) {
		return "", nil
	}
	return username("user.username", h.User.Username)
}

// gitlabSameID compares two numeric account ids as sent (JSON numbers);
// absent or null ids are never the same.
func gitlabSameID(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 || string(a) == "null" || string(b) == "null" {
		return false
	}
	var x, y json.Number
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return x != "" && x == y
}
