package webhook

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// GitHub's published review_requested, review_request_removed and
// pull_request_review examples: who, what and when, for the roster; a
// request keeps the whole change (a version not reviewed yet is started
// from it), and none of them is a review of new code.
// Rules: R-REVIEWERS-1, R-REVIEWERS-2.
func TestGitHub_ReviewerEvents(t *testing.T) {
	at := time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)
	for _, tt := range []struct {
		event, file string
		want        RosterChange
	}{
		{"pull_request", "pull_request.review_requested.json", RosterChange{Requested: []string{"octocat"}, At: at}},
		{"pull_request", "pull_request.review_request_removed.json", RosterChange{Removed: []string{"octocat"}, At: at}},
		{"pull_request_review", "pull_request_review.submitted.json", RosterChange{Reviewed: []string{"Codertocat"}, At: time.Date(2019, 5, 15, 15, 20, 38, 0, time.UTC)}},
	} {
		ev, err := ghAdapter.ParseEvent(ghRequest(tt.event, ghFixture(t, tt.file), nil))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if ev.Skip != "" || !ev.ReviewersOnly || ev.Roster == nil || !reflect.DeepEqual(*ev.Roster, tt.want) {
			t.Fatalf("%s: skip %q, reviewers only %v, roster %+v; want %+v", tt.file, ev.Skip, ev.ReviewersOnly, ev.Roster, tt.want)
		}
		if ev.Change.ChangelistID != "Codertocat/Hello-World#2" || ev.Number != 2 {
			t.Fatalf("%s: changelist %q", tt.file, ev.Change.ChangelistID)
		}
		if ev.Roster.Added() && (ev.HeadSHA == "" || ev.Change.Title == "" || ev.Change.Author != "Codertocat") {
			t.Fatalf("%s: a request without the change it needs to start a review: %+v", tt.file, ev)
		}
	}
	team := ghEdit(t, "pull_request.review_requested.json", func(m map[string]any) {
		delete(m, "requested_reviewer")
		m["requested_team"] = map[string]any{"name": "Justice League", "id": 1, "slug": "justice-league", "privacy": "closed", "permission": "pull"}
	})
	ev, err := ghAdapter.ParseEvent(ghRequest("pull_request", team, nil))
	if err != nil || !reflect.DeepEqual(ev.Roster.Teams, []string{"justice-league"}) || !ev.Roster.Added() {
		t.Fatalf("a team requested: %+v %v", ev.Roster, err)
	}
	draft := ghEdit(t, "pull_request.review_requested.json", func(m map[string]any) { ghPR(m)["draft"] = true })
	closed := ghEdit(t, "pull_request_review.submitted.json", func(m map[string]any) { ghPR(m)["state"] = "closed" })
	for name, tc := range map[string]struct {
		event string
		body  []byte
		want  string
	}{
		"request on a draft":       {"pull_request", draft, "draft"},
		"review of a closed pull":  {"pull_request_review", closed, "pull request not open"},
		"review dismissed":         {"pull_request_review", ghEdit(t, "pull_request_review.submitted.json", func(m map[string]any) { m["action"] = "dismissed" }), "review action not used: dismissed"},
		"request without a person": {"pull_request", ghEdit(t, "pull_request.review_requested.json", func(m map[string]any) { delete(m, "requested_reviewer") }), ""},
		"reviewer with an address": {"pull_request", ghEdit(t, "pull_request.review_requested.json", func(m map[string]any) { m["requested_reviewer"] = map[string]any{"login": "a@b.c"} }), ""},
	} {
		ev, err := ghAdapter.ParseEvent(ghRequest(tc.event, tc.body, nil))
		if tc.want == "" {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Errorf("%s: %+v %v, want a field error", name, ev, err)
			}
			continue
		}
		if err != nil || ev.Skip != tc.want {
			t.Errorf("%s: skip %q (%v), want %q", name, ev.Skip, err, tc.want)
		}
	}
}

// GitLab: an update whose changes.reviewers adds someone (and takes
// nobody off) is a reviewers-only event; with new commits as well it is
// a new version that also changes the roster.
// Rules: R-REVIEWERS-1.
func TestGitLab_ReviewersChanged(t *testing.T) {
	ev, err := glTokenAdapter.ParseEvent(glRequest(glFixture(t, "merge_request.update-reviewers.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := RosterChange{Requested: []string{"user2"}, At: time.Date(2013, 12, 3, 17, 30, 0, 0, time.UTC)}
	if ev.Skip != "" || !ev.ReviewersOnly || ev.Roster == nil || !reflect.DeepEqual(*ev.Roster, want) || ev.HeadSHA == "" {
		t.Fatalf("reviewer added: %+v", ev)
	}
	removed := glEdit(t, "merge_request.update-reviewers.json", func(m map[string]any) {
		r := m["changes"].(map[string]any)["reviewers"].(map[string]any)
		r["previous"], r["current"] = r["current"], r["previous"]
	})
	ev, err = glTokenAdapter.ParseEvent(glRequest(removed, nil))
	if err != nil || ev.Roster == nil || !reflect.DeepEqual(ev.Roster.Removed, []string{"user2"}) || ev.Roster.Added() {
		t.Fatalf("reviewer removed: %+v %v", ev.Roster, err)
	}
	pushed := glEdit(t, "merge_request.update-reviewers.json", func(m map[string]any) { glAttrs(m)["oldrev"] = "ae73cb07c9eeaf35924a10f713b364d32b2dd34f" })
	ev, err = glTokenAdapter.ParseEvent(glRequest(pushed, nil))
	if err != nil || ev.ReviewersOnly || ev.Roster == nil || !ev.Roster.Added() {
		t.Fatalf("new commits and a reviewer: %+v %v", ev, err)
	}
}

// Gerrit's reviewer-added and reviewer-deleted (documented shape): the
// patch set's version, who, when; a reviewer named by address only still
// asks for a look; an addition on a patch set without code change goes
// to the latest reviewed version.
// Rules: R-REVIEWERS-1.
func TestGerrit_ReviewerEvents(t *testing.T) {
	at := time.Unix(1700480100, 0).UTC()
	ev, err := grAdapter.ParseEvent(grRequest(grFixture(t, "reviewer-added.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	if !ev.ReviewersOnly || ev.Change.ReviewVersion != 2 || !reflect.DeepEqual(*ev.Roster, RosterChange{Requested: []string{"rroe"}, At: at}) || ev.NoCodeChange {
		t.Fatalf("reviewer-added: %+v roster %+v", ev, ev.Roster)
	}
	if ev.Change.IdempotencyKey == "" || checkIdempotencyKey(ev.Change.IdempotencyKey) != nil {
		t.Fatalf("key %q", ev.Change.IdempotencyKey)
	}
	ev, err = grAdapter.ParseEvent(grRequest(grFixture(t, "reviewer-deleted.json"), nil))
	if err != nil || !reflect.DeepEqual(ev.Roster.Removed, []string{"rroe"}) || ev.Roster.Added() {
		t.Fatalf("reviewer-deleted: %+v %v", ev.Roster, err)
	}
	byAddress := grEdit(t, "reviewer-added.json", func(m map[string]any) {
		delete(m["reviewer"].(map[string]any), "username")
		grPatchSet(m)["kind"] = "NO_CODE_CHANGE"
	})
	ev, err = grAdapter.ParseEvent(grRequest(byAddress, nil))
	if err != nil || !ev.Roster.Added() || len(ev.Roster.Requested) != 0 || !ev.NoCodeChange {
		t.Fatalf("added by address on a patch set without code change: %+v %v", ev, err)
	}
}
