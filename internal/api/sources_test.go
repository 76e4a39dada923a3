package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// These tests stop before anything is stored: routing, authentication and
// skipped events. Creating jobs is tested end to end (internal/e2e).

func testHandler(sources map[string]Parser) *Handler {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &Handler{Sources: sources, Log: log,
		Intake: &Intake{Log: log, Now: time.Now, Versions: failingVersions{}}}
}

// failingVersions fails the test's request if intake ever gets as far as
// assigning a version.
type failingVersions struct{}

func (failingVersions) PlaceHead(context.Context, store.HeadEvent) (store.Placement, error) {
	return store.Placement{}, errors.New("no version expected")
}

func post(path string, headers, query map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	h := map[string]string{}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	return events.APIGatewayV2HTTPRequest{RawPath: path, Headers: h, QueryStringParameters: query, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path}}}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../webhook/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWebhookRoutes_UnconfiguredKnownSourceIs404NotConfigured(t *testing.T) {
	h := testHandler(map[string]Parser{"github": webhook.GitHub{Secret: []byte("s")}})
	for _, src := range []string{"generic", "gitlab", "gerrit"} {
		resp, _ := h.Handle(context.Background(), post("/webhooks/"+src, nil, nil, []byte(`{}`)))
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Body, "source not configured") {
			t.Errorf("%s: %d %s, want 404 source not configured", src, resp.StatusCode, resp.Body)
		}
	}
	resp, _ := h.Handle(context.Background(), post("/webhooks/bitbucket", nil, nil, []byte(`{}`)))
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Body, "unknown webhook source") {
		t.Errorf("bitbucket: %d %s, want 404 unknown source", resp.StatusCode, resp.Body)
	}
}

// Authentic requests that need no review are acknowledged with 202 and
// {"status":"ignored","reason":...}; nothing is created (the handler has no
// store: reaching it would panic).
func TestWebhookRoutes_SkippedEventsAreIgnored202(t *testing.T) {
	h := testHandler(map[string]Parser{
		"github": webhook.GitHub{Secret: []byte("gh")},
		"gitlab": webhook.GitLab{Token: []byte("gl")},
		"gerrit": webhook.Gerrit{Token: []byte("gr")},
	})
	ping := fixture(t, "github/ping.json")
	closed := fixture(t, "github/pull_request.closed.json")
	push := fixture(t, "gitlab/push.json")
	merged := fixture(t, "gerrit/change-merged.json")
	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		reason string
	}{
		{"github ping", post("/webhooks/github", map[string]string{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1",
			"X-Hub-Signature-256": webhook.Sign([]byte("gh"), ping)}, nil, ping), "ping"},
		{"github closed", post("/webhooks/github", map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d2",
			"X-Hub-Signature-256": webhook.Sign([]byte("gh"), closed)}, nil, closed), "action not reviewed: closed"},
		{"gitlab push", post("/webhooks/gitlab", map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "gl"}, nil, push),
			"event not reviewed: Push_Hook"},
		{"gerrit merged", post("/webhooks/gerrit", nil, map[string]string{"token": "gr"}, merged), "event not reviewed: change-merged"},
	}
	for _, c := range cases {
		resp, _ := h.Handle(context.Background(), c.req)
		var ign Ignored
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &ign) != nil || ign.Status != "ignored" || ign.Reason != c.reason {
			t.Errorf("%s: %d %s, want 202 ignored %q", c.name, resp.StatusCode, resp.Body, c.reason)
		}
	}
}

// Gerrit's ?token= reaches the adapter as the X-Criticizer-Query-Token
// pseudo-header; a client cannot set the pseudo-header itself.
func TestGerritRoute_QueryTokenBecomesPseudoHeader(t *testing.T) {
	h := testHandler(map[string]Parser{"gerrit": webhook.Gerrit{Token: []byte("gr")}})
	merged := fixture(t, "gerrit/change-merged.json")
	cases := []struct {
		name    string
		headers map[string]string
		query   map[string]string
		want    int
	}{
		{"query token", nil, map[string]string{"token": "gr"}, http.StatusAccepted},
		{"header token", map[string]string{webhook.GerritTokenHeader: "gr"}, nil, http.StatusAccepted},
		{"wrong query token", nil, map[string]string{"token": "nope"}, http.StatusUnauthorized},
		{"no token", nil, nil, http.StatusUnauthorized},
		{"pseudo-header sent by the client", map[string]string{webhook.GerritQueryTokenHeader: "gr"}, nil, http.StatusUnauthorized},
	}
	for _, c := range cases {
		resp, _ := h.Handle(context.Background(), post("/webhooks/gerrit", c.headers, c.query, merged))
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, resp.Body, c.want)
		}
	}
}

// A wrong GitHub signature is 401 before anything else happens.
func TestGitHubRoute_WrongSignatureIs401(t *testing.T) {
	h := testHandler(map[string]Parser{"github": webhook.GitHub{Secret: []byte("gh")}})
	body := fixture(t, "github/pull_request.opened.json")
	resp, _ := h.Handle(context.Background(), post("/webhooks/github", map[string]string{"X-GitHub-Event": "pull_request",
		"X-GitHub-Delivery": "d", "X-Hub-Signature-256": webhook.Sign([]byte("other"), body)}, nil, body))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%d %s, want 401", resp.StatusCode, resp.Body)
	}
}

func TestStatus_SkipErrorIs202(t *testing.T) {
	if got := webhook.Status(&webhook.SkipError{Reason: "ping"}); got != http.StatusAccepted {
		t.Fatalf("Status(SkipError) = %d, want 202", got)
	}
}

func TestMaskIdentity(t *testing.T) {
	for in, want := range map[string]string{"github:hubot": "github:h***", "gerrit:Ünal": "gerrit:Ü***", "x": "***", "gitlab:": "***"} {
		if got := MaskIdentity(in); got != want {
			t.Errorf("MaskIdentity(%q) = %q, want %q", in, got, want)
		}
	}
}
