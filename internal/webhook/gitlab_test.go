package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	glTestToken = "gitlab-test-token"
	// A Standard Webhooks signing secret (32 random bytes), as GitLab
	// generates them.
	glTestSigningSecret = "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q="
)

var glTestNow = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

func glFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gitlab", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// glRequest builds a delivery as GitLab sends it with a secret token.
// Entries in over replace (or, when empty, remove) headers.
func glRequest(body []byte, over map[string]string) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(GitLabEventHeader, "Merge Request Hook")
	h.Set(GitLabTokenHeader, glTestToken)
	h.Set("Idempotency-Key", "4a2b5c1e-8f0d-4e7a-9b3c-2d1e0f9a8b7c")
	h.Set(GitLabEventUUIDHeader, "13792a34-cac6-4fda-95a8-c58e00a3954e")
	h.Set(GitLabWebhookUUIDHeader, "a1b2c3d4-0000-4000-8000-000000000001")
	h.Set("User-Agent", "GitLab/17.11.0")
	for k, v := range over {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	return Request{Header: h.Get, Body: body}
}

// glSigned adds Standard Webhooks headers signed at ts.
func glSigned(t testing.TB, body []byte, ts time.Time, over map[string]string) Request {
	t.Helper()
	sig, err := SignStandardWebhook(glTestSigningSecret, "msg_2vQ8", ts.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		GitLabTokenHeader:        "",
		StandardWebhookID:        "msg_2vQ8",
		StandardWebhookTimestamp: strconv.FormatInt(ts.Unix(), 10),
		StandardWebhookSignature: sig,
	}
	for k, v := range over {
		all[k] = v
	}
	return glRequest(body, all)
}

func glEdit(t testing.TB, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(glFixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func glAttrs(m map[string]any) map[string]any { return m["object_attributes"].(map[string]any) }

var (
	glTokenAdapter  = GitLab{Token: []byte(glTestToken)}
	glSignedAdapter = GitLab{SigningSecret: glTestSigningSecret, Now: func() time.Time { return glTestNow }}
)

func TestGitLabOpenRealPayload(t *testing.T) {
	ev, err := glTokenAdapter.ParseEvent(glRequest(glFixture(t, "merge_request.open.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		Change: Change{
			Source:         "gitlab",
			IdempotencyKey: "4a2b5c1e-8f0d-4e7a-9b3c-2d1e0f9a8b7c",
			ChangelistID:   "gitlabhq/gitlab-test!1",
			Title:          "MS-Viewport",
			URL:            "http://example.com/diaspora/merge_requests/1",
			// user is root (id 1), the author is id 51: the hook does
			// not say who the author is (R-SOURCE-1).
			Author: "",
		},
		Repo:        "gitlabhq/gitlab-test",
		Number:      1,
		HeadSHA:     "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
		Reviewers:   []string{"user1"},
		KeyUnsigned: true, // the key is a header the signature (token) does not cover
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("ParseEvent:\n got %+v\nwant %+v", ev, want)
	}
	if c, err := glTokenAdapter.Parse(glRequest(glFixture(t, "merge_request.open.json"), nil)); err != nil || !reflect.DeepEqual(c, want.Change) {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
}

func TestGitLabActions(t *testing.T) {
	reopen := glEdit(t, "merge_request.open.json", func(m map[string]any) { glAttrs(m)["action"] = "reopen" })
	approved := glEdit(t, "merge_request.open.json", func(m map[string]any) { glAttrs(m)["action"] = "approved" })
	updateEmptyOldrev := glEdit(t, "merge_request.update-push.json", func(m map[string]any) { glAttrs(m)["oldrev"] = "" })
	legacyWIP := glEdit(t, "merge_request.open.json", func(m map[string]any) {
		delete(glAttrs(m), "draft")
		glAttrs(m)["work_in_progress"] = true
	})
	tests := []struct {
		name     string
		body     []byte
		over     map[string]string
		wantSkip string
	}{
		{"open", glFixture(t, "merge_request.open.json"), nil, ""},
		{"reopen", reopen, nil, ""},
		{"update with new commits", glFixture(t, "merge_request.update-push.json"), nil, ""},
		{"update of the title", glFixture(t, "merge_request.update-title.json"), nil, "update without new commits"},
		{"update with empty oldrev", updateEmptyOldrev, nil, "update without new commits"},
		{"close", glFixture(t, "merge_request.close.json"), nil, "action not reviewed: close"},
		{"approved", approved, nil, "action not reviewed: approved"},
		{"draft", glFixture(t, "merge_request.open-draft.json"), nil, "draft"},
		{"work in progress (before draft)", legacyWIP, nil, "draft"},
		{"push hook", glFixture(t, "push.json"), map[string]string{GitLabEventHeader: "Push Hook"}, "event not reviewed: Push_Hook"},
		{"push without event header", glFixture(t, "push.json"), map[string]string{GitLabEventHeader: ""}, "event not reviewed: push"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := glTokenAdapter.ParseEvent(glRequest(tt.body, tt.over))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Skip != tt.wantSkip {
				t.Fatalf("Skip = %q, want %q", ev.Skip, tt.wantSkip)
			}
			if tt.wantSkip == "" && ev.Change.ChangelistID != "gitlabhq/gitlab-test!1" {
				t.Fatalf("ChangelistID = %q", ev.Change.ChangelistID)
			}
		})
	}
}

func TestGitLabIdempotencyKeyFallbacks(t *testing.T) {
	body := glFixture(t, "merge_request.open.json")
	tests := []struct {
		name string
		over map[string]string
		want string
	}{
		{"Idempotency-Key first", nil, "4a2b5c1e-8f0d-4e7a-9b3c-2d1e0f9a8b7c"},
		{"then X-Gitlab-Event-UUID", map[string]string{"Idempotency-Key": ""}, "13792a34-cac6-4fda-95a8-c58e00a3954e"},
		{"then X-Gitlab-Webhook-UUID", map[string]string{"Idempotency-Key": "", GitLabEventUUIDHeader: ""}, "a1b2c3d4-0000-4000-8000-000000000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := glTokenAdapter.ParseEvent(glRequest(body, tt.over))
			if err != nil || ev.Change.IdempotencyKey != tt.want {
				t.Fatalf("key = %q, %v; want %q", ev.Change.IdempotencyKey, err, tt.want)
			}
		})
	}
	_, err := glTokenAdapter.ParseEvent(glRequest(body, map[string]string{"Idempotency-Key": "", GitLabEventUUIDHeader: "", GitLabWebhookUUIDHeader: ""}))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Idempotency-Key" {
		t.Fatalf("no key: err = %v", err)
	}
	_, err = glTokenAdapter.ParseEvent(glRequest(body, map[string]string{"Idempotency-Key": "", GitLabEventUUIDHeader: strings.Repeat("x", 200)}))
	if !errors.As(err, &fe) || fe.Field != GitLabEventUUIDHeader {
		t.Fatalf("long key: err = %v", err)
	}
}

func TestGitLabTokenAuth(t *testing.T) {
	body := glFixture(t, "merge_request.open.json")
	tests := []struct {
		name    string
		adapter GitLab
		req     Request
	}{
		{"missing token", glTokenAdapter, glRequest(body, map[string]string{GitLabTokenHeader: ""})},
		{"wrong token", glTokenAdapter, glRequest(body, map[string]string{GitLabTokenHeader: "gitlab-test-tokeN"})},
		{"token prefix", glTokenAdapter, glRequest(body, map[string]string{GitLabTokenHeader: "gitlab-test"})},
		{"nothing configured", GitLab{}, glRequest(body, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.adapter.ParseEvent(tt.req)
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *AuthError", err)
			}
			if strings.Contains(err.Error(), glTestToken) {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

// The Standard Webhooks reference vector (the spec's and the svix
// libraries' example), cross-checked with npm standardwebhooks 1.1.1.
func TestStandardWebhookReferenceVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	got, err := SignStandardWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	err = verifyStandardWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v2,abc "+got, body, time.Unix(1614265330+60, 0), DefaultSignatureTolerance)
	if err != nil {
		t.Fatalf("reference signature refused: %v", err)
	}
}

func TestGitLabSignedDeliveries(t *testing.T) {
	body := glFixture(t, "merge_request.open.json")
	if _, err := glSignedAdapter.ParseEvent(glSigned(t, body, glTestNow.Add(-30*time.Second), nil)); err != nil {
		t.Fatalf("valid signature refused: %v", err)
	}
	// Key rotation: several signatures, one valid.
	good := glSigned(t, body, glTestNow, nil).Header(StandardWebhookSignature)
	rotated := glSigned(t, body, glTestNow, map[string]string{StandardWebhookSignature: "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= " + good})
	if _, err := glSignedAdapter.ParseEvent(rotated); err != nil {
		t.Fatalf("rotated signatures refused: %v", err)
	}
	both := GitLab{Token: []byte(glTestToken), SigningSecret: glTestSigningSecret, Now: glSignedAdapter.Now}
	if _, err := both.ParseEvent(glSigned(t, body, glTestNow, map[string]string{GitLabTokenHeader: glTestToken})); err != nil {
		t.Fatalf("token+signature refused: %v", err)
	}

	tampered := []byte(strings.Replace(string(body), "MS-Viewport", "MS-Viewpory", 1))
	tests := []struct {
		name    string
		adapter GitLab
		req     Request
	}{
		{"replayed after the window", glSignedAdapter, glSigned(t, body, glTestNow.Add(-6*time.Minute), nil)},
		{"from the future", glSignedAdapter, glSigned(t, body, glTestNow.Add(6*time.Minute), nil)},
		{"tampered body", glSignedAdapter, Request{Header: glSigned(t, body, glTestNow, nil).Header, Body: tampered}},
		{"other id", glSignedAdapter, glSigned(t, body, glTestNow, map[string]string{StandardWebhookID: "msg_other"})},
		{"unsigned", glSignedAdapter, glRequest(body, nil)},
		{"no timestamp", glSignedAdapter, glSigned(t, body, glTestNow, map[string]string{StandardWebhookTimestamp: ""})},
		{"timestamp not a number", glSignedAdapter, glSigned(t, body, glTestNow, map[string]string{StandardWebhookTimestamp: "yesterday"})},
		{"only other versions", glSignedAdapter, glSigned(t, body, glTestNow, map[string]string{StandardWebhookSignature: "v1a,abcd"})},
		{"garbled base64", glSignedAdapter, glSigned(t, body, glTestNow, map[string]string{StandardWebhookSignature: "v1,!!!"})},
		{"signature but token required", both, glSigned(t, body, glTestNow, nil)},
		{"token but signature required", both, glRequest(body, nil)},
		{"malformed secret", GitLab{SigningSecret: "whsec_%%%", Now: glSignedAdapter.Now}, glSigned(t, body, glTestNow, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.adapter.ParseEvent(tt.req)
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *AuthError", err)
			}
			if strings.Contains(err.Error(), "dGVzdHRl") {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestGitLabTolerance(t *testing.T) {
	body := glFixture(t, "merge_request.open.json")
	strict := glSignedAdapter
	strict.Tolerance = 10 * time.Second
	if _, err := strict.ParseEvent(glSigned(t, body, glTestNow.Add(-30*time.Second), nil)); err == nil {
		t.Fatal("30s-old delivery accepted with a 10s tolerance")
	}
}

func TestGitLabValidate(t *testing.T) {
	if err := glTokenAdapter.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := glSignedAdapter.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (GitLab{}).Validate(); err == nil {
		t.Fatal("empty config validated")
	}
	if err := (GitLab{SigningSecret: "whsec_not base64"}).Validate(); err == nil || strings.Contains(err.Error(), "not base64") {
		t.Fatalf("malformed secret: %v", err)
	}
}

func TestGitLabFieldErrors(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		field string
	}{
		{"no object_kind", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(m, "object_kind") }), "object_kind"},
		{"no object_attributes", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(m, "object_attributes") }), "object_attributes"},
		{"no action", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(glAttrs(m), "action") }), "object_attributes.action"},
		{"iid a string", glEdit(t, "merge_request.open.json", func(m map[string]any) { glAttrs(m)["iid"] = "1" }), "object_attributes.iid"},
		{"title an object", glEdit(t, "merge_request.open.json", func(m map[string]any) { glAttrs(m)["title"] = map[string]any{} }), "object_attributes.title"},
		{"url relative", glEdit(t, "merge_request.open.json", func(m map[string]any) { glAttrs(m)["url"] = "/diaspora/merge_requests/1" }), "object_attributes.url"},
		{"no last commit", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(glAttrs(m), "last_commit") }), "object_attributes.last_commit"},
		{"no project", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(m, "project") }), "project"},
		{"no user", glEdit(t, "merge_request.open.json", func(m map[string]any) { delete(m, "user") }), "user"},
		{"reviewer without username", glEdit(t, "merge_request.open.json", func(m map[string]any) {
			m["reviewers"] = []any{map[string]any{"id": 6, "name": "User1"}}
		}), "reviewers[0].username"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := glTokenAdapter.ParseEvent(glRequest(tt.body, nil))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want *FieldError on %q", err, tt.field)
			}
			if strings.Contains(err.Error(), "admin@example.com") {
				t.Fatalf("error leaks an address: %v", err)
			}
		})
	}
}

func FuzzGitLabParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "gitlab", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte(`{"object_kind":"merge_request","object_attributes":{"action":"update","oldrev":""}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		var ev Event
		var err error
		if signed {
			ev, err = glSignedAdapter.ParseEvent(glSigned(t, body, glTestNow, nil))
		} else {
			ev, err = glTokenAdapter.ParseEvent(glRequest(body, nil))
		}
		checkFuzzedEvent(t, "gitlab", ev, err)
	})
}

// Regression: a captured signed GitLab request, replayed within its
// timestamp window with another Idempotency-Key header, was a new
// delivery. A signed request's key is its signed webhook-id, whatever the
// unsigned headers say: the replay is the same delivery (R-INTAKE-1).
func TestGitLabSigned_KeyIsTheSignedWebhookID(t *testing.T) {
	body := glFixture(t, "merge_request.open.json")
	req := glSigned(t, body, glTestNow, nil)
	first, err := glSignedAdapter.ParseEvent(req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Change.IdempotencyKey != req.Header(StandardWebhookID) {
		t.Fatalf("key %q, want the webhook-id %q", first.Change.IdempotencyKey, req.Header(StandardWebhookID))
	}
	replay := glSigned(t, body, glTestNow, map[string]string{"Idempotency-Key": "attacker-chosen", GitLabEventUUIDHeader: "another-uuid"})
	again, err := glSignedAdapter.ParseEvent(replay)
	if err != nil {
		t.Fatal(err)
	}
	if again.Change.IdempotencyKey != first.Change.IdempotencyKey {
		t.Fatalf("replay with new unsigned headers got key %q, want %q", again.Change.IdempotencyKey, first.Change.IdempotencyKey)
	}
}
