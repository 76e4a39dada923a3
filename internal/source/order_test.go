package source

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

// GitHub's compare API orders two heads of a pull request: the status of
// GET compare/{other}...{head} (a recorded comparison, its status
// varied), read no further than the status; 404 and 422 (a comparison
// GitHub cannot make) are diverged; a 5xx fails the attempt, retried.
// Rules: R-SOURCE-6.
func TestGitHubStanding_TheCompareStatus(t *testing.T) {
	const other = "34c5c7793cb3b279e22454cb6750c80560547b3a"
	route := "GET /api/v3/repos/Codertocat/Hello-World/compare/" + other + "..." + ghHead + "?per_page=1"
	recorded := fixture(t, "github/compare.json")
	for status, want := range map[string]Standing{"ahead": Ahead, "behind": Behind, "identical": Identical, "diverged": Diverged} {
		f, gh := ghServer(t)
		body := bytes.Replace(recorded, []byte(`"status": "behind"`), []byte(`"status": "`+status+`"`), 1)
		f.on(route, reply(200, body, "Content-Type", "application/json; charset=utf-8"))
		got, err := gh.Standing(context.Background(), ghRef, other)
		if err != nil || got != want {
			t.Errorf("status %q: %v %v, want %v", status, got, err, want)
		}
		reqs := f.requests()
		if len(reqs) != 1 || reqs[0].Header.Get("Accept") != "application/vnd.github+json" || reqs[0].Header.Get("Authorization") != "Bearer "+ghToken {
			t.Fatalf("asked %d times, Accept %q", len(reqs), reqs[0].Header.Get("Accept"))
		}
	}
	for code, want := range map[int]Standing{404: Diverged, 422: Diverged} {
		f, gh := ghServer(t)
		f.on(route, reply(code, fixture(t, "github/not_found.json"), "Content-Type", "application/json; charset=utf-8"))
		if got, err := gh.Standing(context.Background(), ghRef, other); err != nil || got != want {
			t.Errorf("%d: %v %v, want %v", code, got, err, want)
		}
	}
	f, gh := ghServer(t)
	f.on(route, reply(502, fixture(t, "github/server_error.html"), "Content-Type", "text/html"))
	if _, err := gh.Standing(context.Background(), ghRef, other); !retry.Classify(err).Retryable() {
		t.Errorf("502: %v, want a retryable failure", err)
	}
	f, gh = ghServer(t)
	f.on(route, reply(200, []byte(`{"url":"x","status":"sideways"}`), "Content-Type", "application/json"))
	if _, err := gh.Standing(context.Background(), ghRef, other); err == nil {
		t.Error("an unknown status was accepted")
	}
	// Nothing after the status is read: a comparison whose files are
	// garbled still answers.
	f, gh = ghServer(t)
	f.on(route, reply(200, []byte(`{"url":"x","base_commit":{"sha":"a"},"status":"ahead","files":[{`), "Content-Type", "application/json"))
	if got, err := gh.Standing(context.Background(), ghRef, other); err != nil || got != Ahead {
		t.Errorf("status before a garbled tail: %v %v, want ahead", got, err)
	}
}

// GitLab's merge request versions order two heads: a later version (a
// higher id; the list is newest first) is ahead, an earlier one behind;
// a head pushed twice counts by its newest version; the other head not
// listed is diverged; the head itself not listed yet is retried.
// Rules: R-SOURCE-6.
func TestGitLabStanding_TheMergeRequestsVersions(t *testing.T) {
	const (
		older = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567" // versions.json's newest: id 111
		mine  = glHead                                     // id 110
	)
	f, gl := glServer(t)
	ctx := context.Background()
	if got, err := gl.Standing(ctx, glRef, older); err != nil || got != Behind {
		t.Errorf("110 against 111: %v %v, want behind", got, err)
	}
	later := Ref{Source: "gitlab", Repo: "gitlabhq/gitlab-test", Number: 1, HeadSHA: older}
	if got, err := gl.Standing(ctx, later, mine); err != nil || got != Ahead {
		t.Errorf("111 against 110: %v %v, want ahead", got, err)
	}
	if got, err := gl.Standing(ctx, glRef, "ffffffffffffffffffffffffffffffffffffffff"); err != nil || got != Diverged {
		t.Errorf("against a head GitLab does not list: %v %v, want diverged", got, err)
	}
	if got, err := gl.Standing(ctx, glRef, mine); err != nil || got != Identical {
		t.Errorf("against itself: %v %v, want identical", got, err)
	}
	unlisted := Ref{Source: "gitlab", Repo: "gitlabhq/gitlab-test", Number: 1, HeadSHA: "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}
	if _, err := gl.Standing(ctx, unlisted, mine); !retry.Classify(err).Retryable() {
		t.Errorf("a head GitLab has not listed yet: %v, want a retryable failure", err)
	}
	// Pushed back and forth: mine's newest version (112) is ahead of 111.
	var vs []map[string]any
	if err := json.Unmarshal(fixture(t, "gitlab/versions.json"), &vs); err != nil {
		t.Fatal(err)
	}
	again := map[string]any{"id": 112, "head_commit_sha": mine, "base_commit_sha": glBase, "start_commit_sha": glBase}
	b, _ := json.Marshal(append([]map[string]any{again}, vs...))
	f.on(glVersions, reply(200, b, "Content-Type", "application/json", "X-Next-Page", ""))
	if got, err := gl.Standing(ctx, glRef, older); err != nil || got != Ahead {
		t.Errorf("pushed back (112) against 111: %v %v, want ahead", got, err)
	}
}

// A source without an order of its own (Gerrit) has the head ahead, as
// intake placed it; an unknown source fails for good.
// Rules: R-SOURCE-6.
func TestRouterStanding(t *testing.T) {
	r := Router{"gerrit": &Gerrit{}}
	if got, err := r.Standing(context.Background(), Ref{Source: "gerrit"}, "x"); err != nil || got != Ahead {
		t.Errorf("gerrit: %v %v", got, err)
	}
	if _, err := r.Standing(context.Background(), Ref{Source: "nope"}, "x"); err == nil || retry.Classify(err).Retryable() {
		t.Errorf("unknown source: %v", err)
	}
}
