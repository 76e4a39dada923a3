package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

func prefReq(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	r := events.APIGatewayV2HTTPRequest{RawPath: path, Body: body, Headers: headers}
	r.RequestContext.HTTP.Method, r.RequestContext.HTTP.Path = method, path
	return r
}

// The preference endpoint: a GET or HEAD (a scanner's prefetch) shows the
// page and changes nothing; a POST of the page's form saves it whole and
// says so; a field out of range is a 400 naming it, as a page or as JSON,
// with nothing saved; a save from a stale page is a 409 with nothing
// saved; a tampered link is 403 and an expired one 410, saving nothing;
// every page carries the link pages' security headers.
// Rules: R-PREF-2, R-PREF-1.
func TestPreferences_GetShowsPostSavesRefusesBadInput(t *testing.T) {
	store := memstore.NewPreferences()
	signer, err := prefs.NewSigner(voteKey)
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := mail.NewRenderer()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	h := &api.Handler{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Preferences: &api.Preferences{Signer: signer, Store: store, Pages: pages,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return now }}}
	ctx := context.Background()
	const rid, repo = "r_ann", "github:acme/billing"
	path := prefs.Path(signer.Token(rid, repo, now.Add(prefs.LinkLifetime)))
	do := func(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := h.Handle(ctx, prefReq(method, path, body, headers))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	record := func() prefs.Preferences {
		t.Helper()
		p, _ := store.Preferences(ctx, rid)
		return p
	}
	headers := func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
		t.Helper()
		for k, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
			"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "X-Robots-Tag": "noindex"} {
			if r.Headers[k] != want {
				t.Errorf("%s: %q, want %q", k, r.Headers[k], want)
			}
		}
		if csp := r.Headers["Content-Security-Policy"]; !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("CSP %q", csp)
		}
	}

	for _, m := range []string{http.MethodGet, http.MethodHead} {
		r := do(m, path, "", nil)
		if r.StatusCode != 200 || !strings.Contains(r.Body, `action="`+path+`"`) || !strings.Contains(r.Body, "Mute <code>github:acme/billing</code> (the repository of this email)") {
			t.Fatalf("%s: %d %.300s", m, r.StatusCode, r.Body)
		}
		headers(t, r)
	}
	if p := record(); p.Rev != 0 {
		t.Fatalf("a GET changed the record: %+v", p)
	}

	form := func(p prefs.Preferences) string { return prefs.FormBody(p) }
	want := prefs.Preferences{Mode: prefs.Daily, DigestHour: 18, TimeZone: "Europe/Berlin", MinSeverity: prefs.SeverityError, Muted: []string{repo}}
	r := do(http.MethodPost, path, form(want), map[string]string{"content-type": "application/x-www-form-urlencoded"})
	if r.StatusCode != 200 || !strings.Contains(r.Body, `role="status">Saved.`) || !strings.Contains(r.Body, `name="rev" value="1"`) {
		t.Fatalf("POST: %d %.300s", r.StatusCode, r.Body)
	}
	headers(t, r)
	got := record()
	if got.Rev != 1 || got.Mode != prefs.Daily || got.DigestHour != 18 || got.TimeZone != "Europe/Berlin" || got.MinSeverity != "error" || !got.Mutes(repo) {
		t.Fatalf("saved %+v", got)
	}

	// Bad input: 400 naming the field, nothing saved; as a page and as JSON.
	bad := strings.Replace(form(got), "digest_hour=18", "digest_hour=25", 1)
	r = do(http.MethodPost, path, bad, nil)
	if r.StatusCode != 400 || !strings.Contains(r.Body, "Not saved: Digest hour (digest_hour)") || !strings.Contains(r.Body, `aria-invalid="true"`) {
		t.Fatalf("bad hour as a page: %d %.400s", r.StatusCode, r.Body)
	}
	headers(t, r)
	r = do(http.MethodPost, path, bad, map[string]string{"accept": "application/json"})
	var pr api.Problem
	if r.StatusCode != 400 || json.Unmarshal([]byte(r.Body), &pr) != nil || pr.Field != "digest_hour" || pr.Error != "bad_request" {
		t.Fatalf("bad hour as JSON: %d %s", r.StatusCode, r.Body)
	}
	for field, body := range map[string]string{
		"time_zone":    strings.Replace(form(got), "time_zone=Europe%2FBerlin", "time_zone=Local", 1),
		"mute":         form(got) + "&mute=" + url.QueryEscape("github:someone/else"),
		"mode":         strings.Replace(form(got), "mode=daily", "mode=weekly", 1),
		"min_severity": strings.Replace(form(got), "min_severity=error", "min_severity=fatal", 1),
		"rev":          strings.Replace(form(got), "rev=1", "rev=one", 1),
	} {
		r = do(http.MethodPost, path, body, map[string]string{"accept": "application/json"})
		if r.StatusCode != 400 || json.Unmarshal([]byte(r.Body), &pr) != nil || pr.Field != field {
			t.Errorf("bad %s: %d %s", field, r.StatusCode, r.Body)
		}
	}
	if p := record(); p.Rev != 1 {
		t.Fatalf("a refused POST saved: %+v", p)
	}

	// A stale page (rev 0) after the save: 409, nothing saved, the page
	// shows the record as it is.
	stale := want
	stale.Mode = prefs.Instant
	r = do(http.MethodPost, path, form(stale), nil)
	if r.StatusCode != 409 || !strings.Contains(r.Body, "your preferences changed since this page was opened") || !strings.Contains(r.Body, `value="daily" checked`) {
		t.Fatalf("stale page: %d %.300s", r.StatusCode, r.Body)
	}
	if p := record(); p.Rev != 1 || p.Mode != prefs.Daily {
		t.Fatalf("a stale POST saved: %+v", p)
	}
	// JSON clients read the record.
	r = do(http.MethodGet, path, "", map[string]string{"Accept": "application/json"})
	var pj api.PreferencesJSON
	if r.StatusCode != 200 || json.Unmarshal([]byte(r.Body), &pj) != nil || pj.Mode != "daily" || pj.Rev != 1 || len(pj.Muted) != 1 {
		t.Fatalf("GET as JSON: %d %s", r.StatusCode, r.Body)
	}

	// Tampered and expired links: refused, nothing saved.
	tampered := path[:len(path)-2] + pick(path[len(path)-2:] == "AA", "AB", "AA")
	expired := prefs.Path(signer.Token(rid, repo, now))
	for _, c := range []struct {
		path   string
		status int
	}{{tampered, 403}, {expired, 410}} {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			r = do(m, c.path, form(prefs.Preferences{Mode: prefs.Mixed, DigestHour: 1, TimeZone: "UTC", Rev: 1}), nil)
			if r.StatusCode != c.status {
				t.Errorf("%s %s link: %d, want %d", m, pick(c.status == 403, "tampered", "expired"), r.StatusCode, c.status)
			}
		}
		r = do(http.MethodGet, c.path, "", map[string]string{"accept": "application/json"})
		if r.StatusCode != c.status || json.Unmarshal([]byte(r.Body), &pr) != nil || pr.Field != "token" {
			t.Errorf("refused link as JSON: %d %s", r.StatusCode, r.Body)
		}
	}
	if p := record(); p.Rev != 1 || p.Mode != prefs.Daily {
		t.Fatalf("a refused link saved: %+v", p)
	}
	if r = do(http.MethodPut, path, "", nil); r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("PUT: %d", r.StatusCode)
	}
	// Metrics count POSTs by outcome; logs never hold the token.
	for _, outcome := range []string{`"Outcome":"saved"`, `"Outcome":"invalid_field"`, `"Field":"digest_hour"`, `"Outcome":"conflict"`, `"Outcome":"invalid_token"`, `"Outcome":"expired"`} {
		if !strings.Contains(logs.String(), outcome) {
			t.Errorf("no %s in the metrics", outcome)
		}
	}
	if strings.Contains(logs.String(), strings.TrimPrefix(path, "/preferences/")) {
		t.Error("a log line holds the token")
	}
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
