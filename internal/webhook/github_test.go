package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const ghTestSecret = "criticizer-test-secret"

// ghFixture reads a payload from testdata/github.
func ghFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "github", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ghRequest builds a delivery as GitHub sends it: signed with the test
// secret, with event and delivery headers. Entries in over replace (or, when
// empty, remove) headers.
func ghRequest(event string, body []byte, over map[string]string) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(GitHubEventHeader, event)
	h.Set(GitHubDeliveryHeader, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	h.Set(GitHubSignatureHeader, Sign([]byte(ghTestSecret), body))
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	for k, v := range over {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	return Request{Header: h.Get, Body: body}
}

// ghEdit decodes a fixture, applies edit to it and re-encodes it.
func ghEdit(t testing.TB, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ghFixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ghPR(m map[string]any) map[string]any { return m["pull_request"].(map[string]any) }

var ghAdapter = GitHub{Secret: []byte(ghTestSecret)}

func TestGitHubOpenedRealPayload(t *testing.T) {
	ev, err := ghAdapter.ParseEvent(ghRequest("pull_request", ghFixture(t, "pull_request.opened.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		Change: Change{
			Source:         "github",
			IdempotencyKey: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			ChangelistID:   "Codertocat/Hello-World#2",
			ReviewVersion:  0, // assigned at intake per head SHA
			Title:          "Update the README with new information.",
			Description:    "This is a pretty simple change that we need to pull into master.",
			URL:            "https://github.com/Codertocat/Hello-World/pull/2",
			Author:         "Codertocat",
			DiffURL:        "https://github.com/Codertocat/Hello-World/pull/2.diff",
		},
		Repo:        "Codertocat/Hello-World",
		Number:      2,
		HeadSHA:     "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		BaseSHA:     "f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
		Reviewers:   []string{"octocat"},
		KeyUnsigned: true, // the key is a header the signature (token) does not cover
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("ParseEvent:\n got %+v\nwant %+v", ev, want)
	}
	c, err := ghAdapter.Parse(ghRequest("pull_request", ghFixture(t, "pull_request.opened.json"), nil))
	if err != nil || !reflect.DeepEqual(c, want.Change) {
		t.Fatalf("Parse = %+v, %v; want %+v", c, err, want.Change)
	}
}

func TestGitHubReviewedActions(t *testing.T) {
	for _, name := range []string{
		"pull_request.opened.json",
		"pull_request.opened-no-reviewers.json",
		"pull_request.synchronize.json",
		"pull_request.ready_for_review.json",
		"pull_request.reopened.json",
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := ghAdapter.ParseEvent(ghRequest("pull_request", ghFixture(t, name), nil))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Skip != "" || ev.Change.ChangelistID != "Codertocat/Hello-World#2" || ev.HeadSHA == "" || ev.Reviewers == nil {
				t.Fatalf("got %+v", ev)
			}
		})
	}
}

func TestGitHubSkips(t *testing.T) {
	draft := ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["draft"] = true })
	closedSync := ghEdit(t, "pull_request.synchronize.json", func(m map[string]any) { ghPR(m)["state"] = "closed" })
	tests := []struct {
		name, event string
		body        []byte
		want        string
	}{
		{"ping", "ping", ghFixture(t, "ping.json"), "ping"},
		{"closed", "pull_request", ghFixture(t, "pull_request.closed.json"), "action not reviewed: closed"},
		{"converted to draft", "pull_request", ghFixture(t, "pull_request.converted_to_draft.json"), "action not reviewed: converted_to_draft"},
		{"draft opened", "pull_request", draft, "draft"},
		{"synchronize on a closed pull request", "pull_request", closedSync, "pull request not open"},
		{"other event", "push", []byte(`{"ref":"refs/heads/main"}`), "event not reviewed: push"},
		{"hostile event name", "pull request\n", []byte(`{}`), "event not reviewed: other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ghAdapter.ParseEvent(ghRequest(tt.event, tt.body, nil))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Skip != tt.want || ev.Change.Source != "github" {
				t.Fatalf("Skip = %q, want %q", ev.Skip, tt.want)
			}
			_, err = ghAdapter.Parse(ghRequest(tt.event, tt.body, nil))
			var se *SkipError
			if !errors.As(err, &se) || se.Reason != tt.want {
				t.Fatalf("Parse error = %v, want *SkipError %q", err, tt.want)
			}
		})
	}
}

// The signature format is GitHub's: pinned against @octokit/webhooks-methods
// 6.0.0 (`sign`, computed once with node) and against the example in
// GitHub's "Validating webhook deliveries" documentation.
func TestGitHubSignatureMatchesOctokit(t *testing.T) {
	body := ghFixture(t, "pull_request.opened.json")
	if got, want := Sign([]byte(ghTestSecret), body), "sha256=a98fc9571a91c9363a8c92655b2277ac6417ce92d59ffc0e771dc7964e3c2506"; got != want {
		t.Fatalf("Sign(fixture) = %s, octokit says %s", got, want)
	}
	if got, want := Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!")), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; got != want {
		t.Fatalf("Sign(docs example) = %s, want %s", got, want)
	}
	r := ghRequest("pull_request", body, map[string]string{GitHubSignatureHeader: "sha256=a98fc9571a91c9363a8c92655b2277ac6417ce92d59ffc0e771dc7964e3c2506"})
	if _, err := ghAdapter.ParseEvent(r); err != nil {
		t.Fatalf("octokit-signed delivery refused: %v", err)
	}
}

func TestGitHubAuthFailures(t *testing.T) {
	body := ghFixture(t, "pull_request.opened.json")
	tampered := []byte(strings.Replace(string(body), "Update the README", "Update the READMF", 1))
	tests := []struct {
		name    string
		adapter GitHub
		req     Request
	}{
		{"missing signature", ghAdapter, ghRequest("pull_request", body, map[string]string{GitHubSignatureHeader: ""})},
		{"sha1 signature", ghAdapter, ghRequest("pull_request", body, map[string]string{GitHubSignatureHeader: "sha1=0123456789abcdef0123456789abcdef01234567"})},
		{"wrong secret", GitHub{Secret: []byte("other")}, ghRequest("pull_request", body, nil)},
		{"tampered body", ghAdapter, Request{Header: ghRequest("pull_request", body, nil).Header, Body: tampered}},
		{"no secret configured", GitHub{}, ghRequest("pull_request", body, nil)},
		// Auth comes first: an unsigned ping learns nothing.
		{"unsigned ping", ghAdapter, ghRequest("ping", ghFixture(t, "ping.json"), map[string]string{GitHubSignatureHeader: ""})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.adapter.ParseEvent(tt.req)
			var ae *AuthError
			if !errors.As(err, &ae) || Status(err) != 401 {
				t.Fatalf("err = %v, want *AuthError (401)", err)
			}
			if strings.Contains(err.Error(), ghTestSecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestGitHubFieldErrors(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		over  map[string]string
		field string
	}{
		{"no delivery id", ghFixture(t, "pull_request.opened.json"), map[string]string{GitHubDeliveryHeader: ""}, GitHubDeliveryHeader},
		{"no event header", ghFixture(t, "pull_request.opened.json"), map[string]string{GitHubEventHeader: ""}, GitHubEventHeader},
		{"form encoded", ghFixture(t, "pull_request.opened.json"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "Content-Type"},
		{"not JSON", []byte("payload=%7B%7D"), nil, "body"},
		{"two objects", []byte(`{"action":"opened"} {}`), nil, "body"},
		{"no action", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { delete(m, "action") }), nil, "action"},
		{"no pull_request", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { delete(m, "pull_request") }), nil, "pull_request"},
		{"number missing", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { delete(ghPR(m), "number") }), nil, "pull_request.number"},
		{"number zero", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["number"] = 0 }), nil, "pull_request.number"},
		{"number fractional", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["number"] = 2.5 }), nil, "pull_request.number"},
		{"title not a string", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["title"] = 5 }), nil, "pull_request.title"},
		{"title blank", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["title"] = "  " }), nil, "pull_request.title"},
		{"html_url not http", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["html_url"] = "javascript:alert(1)" }), nil, "pull_request.html_url"},
		{"diff_url missing", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { delete(ghPR(m), "diff_url") }), nil, "pull_request.diff_url"},
		{"user null", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { ghPR(m)["user"] = nil }), nil, "pull_request.user"},
		{"head sha short", ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
			ghPR(m)["head"].(map[string]any)["sha"] = "ec26c3e"
		}), nil, "pull_request.head.sha"},
		{"base sha not a commit", ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
			ghPR(m)["base"].(map[string]any)["sha"] = "main"
		}), nil, "pull_request.base.sha"},
		{"repository missing", ghEdit(t, "pull_request.opened.json", func(m map[string]any) { delete(m, "repository") }), nil, "repository"},
		{"repository name odd", ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
			m["repository"].(map[string]any)["full_name"] = "a b/c"
		}), nil, "repository.full_name"},
		{"reviewer login with @", ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
			ghPR(m)["requested_reviewers"] = []any{map[string]any{"login": "octo@example.com"}}
		}), nil, "pull_request.requested_reviewers[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ghAdapter.ParseEvent(ghRequest("pull_request", tt.body, tt.over))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || Status(err) != 400 {
				t.Fatalf("err = %v, want *FieldError on %q", err, tt.field)
			}
			if strings.Contains(err.Error(), "octo@example.com") {
				t.Fatalf("error leaks an address: %v", err)
			}
		})
	}
}

func TestGitHubReviewersSkipTeamsAndDeduplicate(t *testing.T) {
	body := ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
		ghPR(m)["requested_reviewers"] = []any{
			map[string]any{"login": "octocat", "type": "User"},
			map[string]any{"login": "OctoCat", "type": "User"},
			map[string]any{"login": "hubot", "type": "User"},
		}
		ghPR(m)["requested_teams"] = []any{map[string]any{"slug": "justice-league"}}
	})
	ev, err := ghAdapter.ParseEvent(ghRequest("pull_request", body, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"octocat", "hubot"}; !reflect.DeepEqual(ev.Reviewers, want) {
		t.Fatalf("Reviewers = %v, want %v", ev.Reviewers, want)
	}
}

func TestGitHubTooLarge(t *testing.T) {
	body := make([]byte, MaxBody+1)
	_, err := ghAdapter.ParseEvent(ghRequest("pull_request", body, nil))
	if Status(err) != 413 {
		t.Fatalf("err = %v, want 413", err)
	}
}

func TestGitHubNilHeaderFunc(t *testing.T) {
	_, err := ghAdapter.ParseEvent(Request{Body: []byte(`{}`)})
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *AuthError", err)
	}
}

// FuzzGitHubParse signs whatever body it is given, so the fuzzer gets past
// authentication and exercises the parser. Parse must never panic, must
// return only the package's error types, and a parsed Change must be
// complete.
func FuzzGitHubParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "github", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		event := "pull_request"
		if strings.HasSuffix(name, "ping.json") {
			event = "ping"
		}
		f.Add(event, b)
	}
	f.Add("pull_request", []byte(`{"action":"opened","pull_request":{"number":"1"}}`))
	f.Add("pull_request", []byte(`null`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := ghAdapter.ParseEvent(ghRequest(event, body, map[string]string{GitHubEventHeader: event}))
		checkFuzzedEvent(t, "github", ev, err)
	})
}

// checkFuzzedEvent holds the invariants every adapter keeps, whatever the
// input. It is shared by the three adapters' fuzz targets.
func checkFuzzedEvent(t *testing.T, source string, ev Event, err error) {
	t.Helper()
	if err != nil {
		var fe *FieldError
		var ae *AuthError
		var tl *TooLargeError
		if !errors.As(err, &fe) && !errors.As(err, &ae) && !errors.As(err, &tl) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		if fe != nil && fe.Field == "" {
			t.Fatalf("FieldError without a field: %v", err)
		}
		return
	}
	if ev.Change.Source != source {
		t.Fatalf("Source = %q", ev.Change.Source)
	}
	if ev.Skip != "" {
		return
	}
	if ev.ReviewersOnly && ev.Roster == nil {
		t.Fatalf("a reviewers-only event without its roster change: %+v", ev)
	}
	if ev.ReviewersOnly && !ev.Roster.Added() {
		// A removal or a review: recorded, never a job.
		if ev.Change.ChangelistID == "" || ev.Repo == "" || ev.Number < 1 {
			t.Fatalf("incomplete roster event %+v", ev)
		}
		return
	}
	c := ev.Change
	// A GitLab hook may not say who the author is (R-SOURCE-1): the fetch
	// stage reads it from the merge request.
	if c.IdempotencyKey == "" || c.ChangelistID == "" || c.Title == "" || c.URL == "" || (c.Author == "" && source != "gitlab") ||
		ev.Repo == "" || ev.Number < 1 || (len(ev.HeadSHA) != 40 && len(ev.HeadSHA) != 64) || ev.Reviewers == nil {
		t.Fatalf("incomplete event %+v", ev)
	}
	if checkIdempotencyKey(c.IdempotencyKey) != nil {
		t.Fatalf("bad idempotency key %q", c.IdempotencyKey)
	}
	if len(ev.Reviewers) > MaxRecipients {
		t.Fatalf("%d reviewers", len(ev.Reviewers))
	}
	for _, r := range ev.Reviewers {
		if r == "" || strings.Contains(r, "@") {
			t.Fatalf("bad reviewer %q", r)
		}
	}
}

// A pull request from a fork is the upstream repository's: Event.Repo,
// where the diff, the reviewers and the settings are read, is the base
// repository, never the fork the head lives in. An event whose
// pull_request.base.repo is not the repository it is for is refused,
// naming the field, rather than read in either.
// Rules: R-REPO-6.
func TestGitHub_RepoIsTheUpstreamNeverTheFork(t *testing.T) {
	fork := ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
		head := ghPR(m)["head"].(map[string]any)
		head["repo"].(map[string]any)["full_name"] = "mallory/Hello-World"
		head["repo"].(map[string]any)["fork"] = true
	})
	ev, err := ghAdapter.ParseEvent(ghRequest("pull_request", fork, nil))
	if err != nil || ev.Repo != "Codertocat/Hello-World" {
		t.Fatalf("repo %q, %v; want the upstream Codertocat/Hello-World", ev.Repo, err)
	}
	other := ghEdit(t, "pull_request.opened.json", func(m map[string]any) {
		ghPR(m)["base"].(map[string]any)["repo"].(map[string]any)["full_name"] = "mallory/Hello-World"
	})
	_, err = ghAdapter.ParseEvent(ghRequest("pull_request", other, nil))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "pull_request.base.repo.full_name" || Status(err) != 400 {
		t.Fatalf("err = %v, want a 400 naming pull_request.base.repo.full_name", err)
	}
}
