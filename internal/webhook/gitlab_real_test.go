package webhook

import (
	"errors"
	"reflect"
	"testing"
)

// Real merge request hooks recorded from gitlab.com (Woodpecker CI's
// fixtures, testdata/README.md): what each one starts. A hook names the
// merge request's author only by id; the author is the hook's user only
// when that user is the author. A reopen by real6543 of someone else's
// merge request must not name real6543 as its author (the e-mail's "by"
// line, the model's prompt): the author is left for the fetch stage to
// read from the merge request.
// Rules: R-SOURCE-1, R-SOURCE-2.
func TestGitLabRealPayloads_ReviewedWithTheMergeRequestsAuthor(t *testing.T) {
	tests := []struct {
		file       string
		wantSkip   string
		wantAuthor string
		wantOnly   bool // reviewers only
		wantHead   string
	}{
		{file: "merge_request.woodpecker.open.json", wantAuthor: "real6543", wantHead: "2f7670508b771e7e77839402be8b34b13787aba8"},
		// Reopened by real6543 (user.id 4575606); the author is 29352663.
		{file: "merge_request.woodpecker.reopen-by-other-user.json", wantAuthor: "", wantHead: "36b5813240a9d2daa29b05046d56a53e18f39a3e"},
		{file: "merge_request.woodpecker.update-push.json", wantAuthor: "anbraten", wantHead: "c136499ec574e1034b24c5d306de9acda3005367"},
		{file: "merge_request.woodpecker.update-ready.json", wantAuthor: "real6543", wantHead: "2f7670508b771e7e77839402be8b34b13787aba8"},
		{file: "merge_request.woodpecker.update-reviewers.json", wantAuthor: "real6543", wantOnly: true, wantHead: "2f7670508b771e7e77839402be8b34b13787aba8"},
		{file: "merge_request.woodpecker.update-title.json", wantSkip: "update without new commits"},
		{file: "merge_request.woodpecker.close.json", wantSkip: "action not reviewed: close"},
		{file: "merge_request.woodpecker.merge.json", wantSkip: "action not reviewed: merge"},
		{file: "merge_request.woodpecker.approved.json", wantSkip: "action not reviewed: approved"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := glTokenAdapter.ParseEvent(glRequest(glFixture(t, tt.file), nil))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Skip != tt.wantSkip {
				t.Fatalf("Skip = %q, want %q", ev.Skip, tt.wantSkip)
			}
			if tt.wantSkip != "" {
				return
			}
			if ev.Change.Author != tt.wantAuthor || ev.ReviewersOnly != tt.wantOnly || ev.HeadSHA != tt.wantHead {
				t.Fatalf("author %q, reviewers only %v, head %s; want %q, %v, %s",
					ev.Change.Author, ev.ReviewersOnly, ev.HeadSHA, tt.wantAuthor, tt.wantOnly, tt.wantHead)
			}
		})
	}
}

// A reopen names the merge request's author only when the reopener is
// the author: the same real payload with user.id made the author_id keeps
// the user's name; GitLab's documented example (user 1, author 51) does
// not name user 1.
// Rules: R-SOURCE-1.
func TestGitLabAuthor_OnlyWhenTheUserIsTheAuthor(t *testing.T) {
	byAuthor := glEdit(t, "merge_request.woodpecker.reopen-by-other-user.json", func(m map[string]any) {
		m["user"].(map[string]any)["id"] = glAttrs(m)["author_id"]
	})
	noAuthorID := glEdit(t, "merge_request.woodpecker.open.json", func(m map[string]any) { delete(glAttrs(m), "author_id") })
	for name, tt := range map[string]struct {
		body []byte
		want string
	}{
		"reopened by its author": {byAuthor, "real6543"},
		"no author_id":           {noAuthorID, ""},
		"documented example":     {glFixture(t, "merge_request.open.json"), ""},
	} {
		ev, err := glTokenAdapter.ParseEvent(glRequest(tt.body, nil))
		if err != nil || ev.Skip != "" || ev.Change.Author != tt.want {
			t.Errorf("%s: author %q (skip %q, %v), want %q", name, ev.Change.Author, ev.Skip, err, tt.want)
		}
	}
}

// Marking a draft ready (changes.draft true → false, no oldrev) starts a
// review, as GitHub's ready_for_review does; the older work_in_progress
// change does too. Going back to draft, or an edit, does not.
// Rules: R-SOURCE-2.
func TestGitLabMarkedReady_StartsAReview(t *testing.T) {
	legacy := glEdit(t, "merge_request.woodpecker.update-ready.json", func(m map[string]any) {
		ch := m["changes"].(map[string]any)
		ch["work_in_progress"] = ch["draft"]
		delete(ch, "draft")
	})
	toDraft := glEdit(t, "merge_request.woodpecker.update-ready.json", func(m map[string]any) {
		m["changes"].(map[string]any)["draft"] = map[string]any{"previous": false, "current": true}
		glAttrs(m)["draft"] = true
	})
	stillDraft := glEdit(t, "merge_request.woodpecker.update-ready.json", func(m map[string]any) {
		m["changes"].(map[string]any)["draft"] = map[string]any{"previous": true, "current": true}
	})
	for name, tt := range map[string]struct {
		body     []byte
		wantSkip string
	}{
		"marked ready":                    {glFixture(t, "merge_request.woodpecker.update-ready.json"), ""},
		"marked ready (before GitLab 14)": {legacy, ""},
		"marked draft":                    {toDraft, "update without new commits"},
		"draft unchanged":                 {stillDraft, "update without new commits"},
	} {
		ev, err := glTokenAdapter.ParseEvent(glRequest(tt.body, nil))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ev.Skip != tt.wantSkip || (tt.wantSkip == "" && (ev.ReviewersOnly || ev.Change.ChangelistID != "demoaccount2-commits-group/test_ci_tmp!3")) {
			t.Errorf("%s: skip %q, reviewers only %v, changelist %q; want skip %q and a review",
				name, ev.Skip, ev.ReviewersOnly, ev.Change.ChangelistID, tt.wantSkip)
		}
	}
}

// Parse, which has no room for a roster, never hands back an event that
// only changes reviewers as a Change to review: it is a *SkipError, as
// ParseEvent's ReviewersOnly says.
// Rules: R-SOURCE-3.
func TestParse_ReviewersOnlyEventIsNoReview(t *testing.T) {
	for name, parse := range map[string]func() (Change, error){
		"gitlab reviewers changed": func() (Change, error) {
			return glTokenAdapter.Parse(glRequest(glFixture(t, "merge_request.woodpecker.update-reviewers.json"), nil))
		},
		"github review_requested": func() (Change, error) {
			return ghAdapter.Parse(ghRequest("pull_request", ghFixture(t, "pull_request.review_requested.json"), nil))
		},
		"github review submitted": func() (Change, error) {
			return ghAdapter.Parse(ghRequest("pull_request_review", ghFixture(t, "pull_request_review.submitted.json"), nil))
		},
		"gerrit reviewer-added": func() (Change, error) {
			return grAdapter.Parse(grRequest(grFixture(t, "reviewer-added.json"), nil))
		},
	} {
		c, err := parse()
		var se *SkipError
		if !errors.As(err, &se) || se.Reason != ReviewersOnlyReason || !reflect.DeepEqual(c, Change{}) {
			t.Errorf("%s: Parse = %+v, %v; want a *SkipError %q", name, c, err, ReviewersOnlyReason)
		}
	}
	// A review is still a Change.
	if c, err := glTokenAdapter.Parse(glRequest(glFixture(t, "merge_request.woodpecker.update-ready.json"), nil)); err != nil || c.ChangelistID == "" {
		t.Fatalf("marked ready: Parse = %+v, %v; want a change", c, err)
	}
}
