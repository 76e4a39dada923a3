package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// These tests stop before the store: authentication, routing, input
// errors and previews. Reruns against DynamoDB are tested in
// internal/store and end to end in internal/e2e (admin_test.go).

const testAdminKey = "0123456789abcdef0123456789abcdef-admin"

func adminHandler(key string, p Previewer, logs *bytes.Buffer) *Handler {
	h := testHandler(nil)
	if logs != nil {
		h.Log = slog.New(slog.NewJSONHandler(logs, nil))
	}
	h.Admin = &Admin{APIKey: key, Log: h.Log, Previewer: p}
	return h
}

func adminReq(method, path string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	r := post(path, headers, nil, []byte(body))
	r.RequestContext.HTTP.Method = method
	return r
}

func bearer(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }

func do(t *testing.T, h *Handler, r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := h.Handle(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Off unless a key is configured: every /admin route answers exactly what
// a path without a route answers, whatever credentials are sent.
func TestAdmin_OffWithoutKey_Indistinguishable404(t *testing.T) {
	for name, h := range map[string]*Handler{"no admin": testHandler(nil), "empty key": adminHandler("", nil, nil)} {
		for _, r := range []events.APIGatewayV2HTTPRequest{
			adminReq(http.MethodPost, "/admin/rerun", bearer(testAdminKey), `{"source":"generic","changelist_id":"x","dry_run":true}`),
			adminReq(http.MethodGet, "/admin/previews", nil, ""),
			adminReq(http.MethodGet, "/admin/previews/critique/v3.html", map[string]string{"X-Api-Key": ""}, ""),
		} {
			got := do(t, h, r)
			missing := do(t, h, adminReq(r.RequestContext.HTTP.Method, r.RawPath+"-nothing-here", nil, ""))
			wantBody := strings.Replace(missing.Body, "-nothing-here", "", 1)
			if got.StatusCode != http.StatusNotFound || got.Body != wantBody {
				t.Errorf("%s: %s %s: %d %s, want what a missing route answers: 404 %s", name, r.RequestContext.HTTP.Method, r.RawPath, got.StatusCode, got.Body, wantBody)
			}
		}
	}
}

// With a key, a missing or wrong one is 401 naming the authorization
// field, in the API's error style; the presented key is never logged.
func TestAdmin_MissingOrWrongKey401_NeverLogged(t *testing.T) {
	var logs bytes.Buffer
	h := adminHandler(testAdminKey, fakePreviewer{}, &logs)
	wrong := "wrong-key-that-must-not-be-logged"
	for name, hd := range map[string]map[string]string{
		"none":                nil,
		"wrong bearer":        bearer(wrong),
		"wrong x-api-key":     {"X-Api-Key": wrong},
		"prefix of the key":   bearer(testAdminKey[:10]),
		"key plus more":       bearer(testAdminKey + "x"),
		"basic scheme":        {"Authorization": "Basic " + testAdminKey},
		"bare key, no scheme": {"Authorization": testAdminKey},
	} {
		for _, r := range []events.APIGatewayV2HTTPRequest{
			adminReq(http.MethodGet, "/admin/previews", hd, ""),
			adminReq(http.MethodPost, "/admin/rerun", hd, `{}`),
			adminReq(http.MethodGet, "/admin/unknown", hd, ""),
		} {
			resp := do(t, h, r)
			var p Problem
			if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal([]byte(resp.Body), &p) != nil ||
				p.Error != "unauthorized" || p.Field != "authorization" || resp.Headers["WWW-Authenticate"] == "" {
				t.Errorf("%s: %s: %d %s, want 401 naming the authorization field", name, r.RawPath, resp.StatusCode, resp.Body)
			}
		}
	}
	if strings.Contains(logs.String(), wrong) || strings.Contains(logs.String(), testAdminKey[:10]) {
		t.Fatalf("a presented key reached the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "admin request refused") {
		t.Fatal("refusals are not logged at all")
	}
}

// The right key, as a bearer token (any case of the scheme) or as
// X-Api-Key (what a SigV4-signed request behind API Gateway uses, since
// the signature takes the Authorization header), is let in.
func TestAdmin_RightKey200_BearerOrXAPIKey(t *testing.T) {
	h := adminHandler(testAdminKey, fakePreviewer{}, nil)
	for name, hd := range map[string]map[string]string{
		"bearer":                 bearer(testAdminKey),
		"lower-case bearer":      {"Authorization": "bearer " + testAdminKey},
		"x-api-key":              {"X-Api-Key": testAdminKey},
		"x-api-key beside sigv4": {"X-Api-Key": testAdminKey, "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/..."},
	} {
		resp := do(t, h, adminReq(http.MethodGet, "/admin/previews", hd, ""))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", name, resp.StatusCode, resp.Body)
		}
	}
	// Let in, an unknown admin path is a missing route.
	if resp := do(t, h, adminReq(http.MethodGet, "/admin/nothing", bearer(testAdminKey), "")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown admin path: %d, want 404", resp.StatusCode)
	}
	if resp := do(t, h, adminReq(http.MethodGet, "/admin/rerun", bearer(testAdminKey), "")); resp.StatusCode != http.StatusMethodNotAllowed || resp.Headers["Allow"] != http.MethodPost {
		t.Errorf("GET /admin/rerun: %d %v, want 405 Allow: POST", resp.StatusCode, resp.Headers)
	}
}

// The comparison is constant time and hashes both sides first, so a
// presented key of another length is compared like any other; an empty
// configured key matches nothing, not even an empty presented one.
func TestKeyMatches_ConstantTimeOverDigests(t *testing.T) {
	for _, c := range []struct {
		configured, presented string
		want                  bool
	}{
		{testAdminKey, testAdminKey, true},
		{testAdminKey, testAdminKey[:len(testAdminKey)-1], false},
		{testAdminKey, testAdminKey + " ", false},
		{testAdminKey, strings.ToUpper(testAdminKey), false},
		{testAdminKey, "", false},
		{"", "", false},
		{"", "anything", false},
	} {
		if got := KeyMatches(c.configured, c.presented); got != c.want {
			t.Errorf("KeyMatches(%q, %q) = %v, want %v", c.configured, c.presented, got, c.want)
		}
	}
}

// POST /admin/rerun decodes strictly and names the field at fault with a
// 4xx; none of these reach the store (the handler has none).
func TestAdminRerun_InputErrorsNameTheField(t *testing.T) {
	h := adminHandler(testAdminKey, nil, nil)
	long := strings.Repeat("x", 257)
	for _, c := range []struct {
		name, body string
		status     int
		field      string
	}{
		{"malformed", `{"source":`, 400, "body"},
		{"not an object", `[1]`, 400, "body"},
		{"two objects", `{"source":"generic","changelist_id":"a","dry_run":true} {}`, 400, "body"},
		{"unknown field", `{"source":"generic","changelist_id":"a","dry_run":true,"force":true}`, 400, "force"},
		{"dry_run not a bool", `{"source":"generic","changelist_id":"a","dry_run":"yes"}`, 400, "dry_run"},
		{"changelist_id not a string", `{"source":"generic","changelist_id":7,"dry_run":true}`, 400, "changelist_id"},
		{"no source", `{"changelist_id":"a","dry_run":true}`, 400, "source"},
		{"unknown source", `{"source":"bitbucket","changelist_id":"a","dry_run":true}`, 400, "source"},
		{"no changelist", `{"source":"generic","dry_run":true}`, 400, "changelist_id"},
		{"blank changelist", `{"source":"generic","changelist_id":"  ","dry_run":true}`, 400, "changelist_id"},
		{"long changelist", `{"source":"generic","changelist_id":"` + long + `","dry_run":true}`, 400, "changelist_id"},
		{"no reason for a real rerun", `{"source":"generic","changelist_id":"a"}`, 400, "reason"},
		{"reason too long", `{"source":"generic","changelist_id":"a","reason":"` + strings.Repeat("r", 1001) + `"}`, 400, "reason"},
		{"invalid UTF-8", "{\"source\":\"generic\",\"changelist_id\":\"\xff\",\"dry_run\":true}", 400, "body"},
		{"too large", `{"source":"generic","changelist_id":"a","reason":"` + strings.Repeat("r", 70<<10) + `"}`, 413, "body"},
	} {
		resp := do(t, h, adminReq(http.MethodPost, "/admin/rerun", bearer(testAdminKey), c.body))
		var p Problem
		if resp.StatusCode != c.status || json.Unmarshal([]byte(resp.Body), &p) != nil || p.Field != c.field {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, resp.StatusCode, resp.Body, c.status, c.field)
		}
	}
}

// fakePreviewer stands in for mail.Renderer's previews.
type fakePreviewer struct{ fail error }

var errUnknownTemplate = errors.New("unknown template")

func (fakePreviewer) PreviewNames() []string {
	return []string{"critique/v3.html", "critique/v3.txt", "odd name.bin"}
}

func (f fakePreviewer) Preview(name string) (string, []byte, error) {
	if f.fail != nil {
		return "", nil, f.fail
	}
	switch name {
	case "critique/v3.html":
		return "text/html; charset=utf-8", []byte("<p>Sample critique of billing-1042</p>"), nil
	case "critique/v3.txt":
		return "text/plain; charset=utf-8", []byte("Sample critique"), nil
	case "odd name.bin":
		return "application/octet-stream", []byte{0xff, 0x00, 0xfe}, nil
	}
	return "", nil, errUnknownTemplate
}

// GET /admin/previews lists each template with its URL; GET
// /admin/previews/{template} (names contain '/') renders it with its
// content type, in a sandbox; an unknown name is a 404 JSON problem.
func TestAdminPreviews_ListAndRenderEachTemplate(t *testing.T) {
	h := adminHandler(testAdminKey, fakePreviewer{}, nil)
	resp := do(t, h, adminReq(http.MethodGet, "/admin/previews", bearer(testAdminKey), ""))
	var list PreviewList
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &list) != nil || len(list.Templates) != 3 {
		t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
	}
	want := map[string]string{"critique/v3.html": "/admin/previews/critique/v3.html", "critique/v3.txt": "/admin/previews/critique/v3.txt",
		"odd name.bin": "/admin/previews/odd%20name.bin"}
	for _, l := range list.Templates {
		if want[l.Name] != l.URL {
			t.Errorf("template %q at %q, want %q", l.Name, l.URL, want[l.Name])
		}
	}
	for path, c := range map[string]struct{ ct, body string }{
		"/admin/previews/critique/v3.html":  {"text/html; charset=utf-8", "<p>Sample critique of billing-1042</p>"},
		"/admin/previews/critique/v3.txt":   {"text/plain; charset=utf-8", "Sample critique"},
		"/admin/previews/critique%2Fv3.txt": {"text/plain; charset=utf-8", "Sample critique"},
	} {
		resp := do(t, h, adminReq(http.MethodGet, path, map[string]string{"X-Api-Key": testAdminKey}, ""))
		if resp.StatusCode != 200 || resp.Headers["Content-Type"] != c.ct || resp.Body != c.body || resp.IsBase64Encoded ||
			!strings.Contains(resp.Headers["Content-Security-Policy"], "sandbox") || resp.Headers["X-Content-Type-Options"] != "nosniff" {
			t.Errorf("%s: %d %v %q", path, resp.StatusCode, resp.Headers, resp.Body)
		}
	}
	// Bytes that are not UTF-8 travel base64-encoded, as API Gateway wants.
	resp = do(t, h, adminReq(http.MethodGet, "/admin/previews/odd%20name.bin", bearer(testAdminKey), ""))
	if resp.StatusCode != 200 || !resp.IsBase64Encoded || resp.Body != "/wD+" {
		t.Errorf("binary preview: %d base64=%v %q", resp.StatusCode, resp.IsBase64Encoded, resp.Body)
	}
	for _, path := range []string{"/admin/previews/critique/v9.html", "/admin/previews/critique", "/admin/previews/", "/admin/previews/%zz"} {
		resp := do(t, h, adminReq(http.MethodGet, path, bearer(testAdminKey), ""))
		var p Problem
		if resp.StatusCode != http.StatusNotFound || json.Unmarshal([]byte(resp.Body), &p) != nil || p.Field != "template" {
			t.Errorf("%s: %d %s, want 404 naming the template", path, resp.StatusCode, resp.Body)
		}
	}
	if resp := do(t, h, adminReq(http.MethodPost, "/admin/previews", bearer(testAdminKey), "")); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /admin/previews: %d, want 405", resp.StatusCode)
	}
}

// A listed template whose Preview says it is unknown (the sentinel the
// lead connects as IsUnknownTemplate) is a 404; any other rendering error
// is a 500 that names the template, not the error.
func TestAdminPreviews_RendererErrors(t *testing.T) {
	h := adminHandler(testAdminKey, fakePreviewer{fail: errUnknownTemplate}, nil)
	h.Admin.IsUnknownTemplate = func(err error) bool { return errors.Is(err, errUnknownTemplate) }
	if resp := do(t, h, adminReq(http.MethodGet, "/admin/previews/critique/v3.html", bearer(testAdminKey), "")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown by the renderer: %d %s, want 404", resp.StatusCode, resp.Body)
	}
	h.Admin.Previewer = fakePreviewer{fail: errors.New("template: critique: executing \"x\" at <.Secret>: boom")}
	resp := do(t, h, adminReq(http.MethodGet, "/admin/previews/critique/v3.html", bearer(testAdminKey), ""))
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(resp.Body, "boom") {
		t.Errorf("render failure: %d %s, want 500 without the error text", resp.StatusCode, resp.Body)
	}
	// No previewer wired: an empty list, every name unknown.
	h.Admin.Previewer = nil
	if resp := do(t, h, adminReq(http.MethodGet, "/admin/previews", bearer(testAdminKey), "")); resp.StatusCode != 200 || resp.Body != `{"templates":[]}` {
		t.Errorf("no previewer: %d %s", resp.StatusCode, resp.Body)
	}
}
