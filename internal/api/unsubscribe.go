package api

import (
	"bytes"
	"context"
	"errors"
	htmltemplate "html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Unsubscribe serves /unsubscribe/{token}: the link in every email's
// List-Unsubscribe header and footer (RFC 8058, seed 004 Phase 8).
//
//   - POST from a mail client's one-click button (body
//     "List-Unsubscribe=One-Click") unsubscribes from the token's scope and
//     answers 200 with an empty body, as RFC 8058 and seed 004 require.
//   - GET answers an HTML page that asks for confirmation with a button.
//     A GET never unsubscribes: corporate mail scanners fetch every link in
//     a message, and reviewers are exactly the people behind such scanners.
//     RFC 8058 §1 gives this reason for the POST.
//   - POST from that page's form (field "confirm") unsubscribes from this
//     repository, or from everything with scope=all, and answers a page
//     saying so. Any valid token proves the reader holds the address, so it
//     may widen the scope to all.
//
// Every answer is the same whether the token is valid or not: a caller
// learns nothing about which tokens or addresses exist.
type Unsubscribe struct {
	Signer     *unsubscribe.Signer // nil: unsubscribe links are off (404)
	Recipients *store.Recipients
	Log        *slog.Logger
}

var unsubscribePages = htmltemplate.Must(htmltemplate.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>Unsubscribe from Criticizer</title>
<style>body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:520px;margin:48px auto;padding:0 16px;color:#1f2328;line-height:1.5}
button{font:inherit;padding:8px 16px;margin:4px 8px 4px 0;border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa;cursor:pointer}
button.primary{background:#1f6feb;color:#fff;border-color:#1f6feb}</style></head><body>
<h1>Unsubscribe from Criticizer</h1>
<p>Stop receiving Criticizer's review critiques for this repository, or stop all of them.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="confirm" value="1">
<button class="primary" type="submit" name="scope" value="repository">Unsubscribe from this repository</button>
<button type="submit" name="scope" value="all">Unsubscribe from all Criticizer emails</button>
</form></body></html>
{{define "done"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>Unsubscribed</title>
<style>body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:520px;margin:48px auto;padding:0 16px;color:#1f2328;line-height:1.5}</style></head><body>
<h1>You are unsubscribed</h1>
<p>{{if .All}}You will not receive Criticizer emails any more.{{else}}You will not receive Criticizer emails for this repository any more.{{end}}
Emails already on their way may still arrive.</p>
</body></html>{{end}}`))

func (u *Unsubscribe) handle(ctx context.Context, method, token string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if u == nil || u.Signer == nil {
		return problem(http.StatusNotFound, "path", "unsubscribe links are not configured")
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return u.page("confirm", struct{ Action string }{Action: "/unsubscribe/" + url.PathEscape(token)})
	case http.MethodPost:
	default:
		return methodNotAllowed("GET, POST")
	}
	body, _ := decodeBody(req)
	form, _ := url.ParseQuery(string(body))
	fromPage := form.Get("confirm") != ""
	all := fromPage && form.Get("scope") == "all"
	if err := u.apply(ctx, token, all); err != nil {
		// Storage failed: the client must retry, and a 5xx tells it to
		// (RFC 8058 clients retry; a person sees the error).
		u.Log.ErrorContext(ctx, "unsubscribe not recorded", "error", err)
		return problem(http.StatusServiceUnavailable, "", "could not record the unsubscribe; try again")
	}
	if fromPage {
		return u.page("done", struct{ All bool }{All: all})
	}
	// RFC 8058 one-click: 200, empty body.
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Cache-Control": "no-store"}}
}

// apply records the unsubscribe for a valid token. An invalid token is not
// an error to the caller (no enumeration); it is counted and logged without
// the token.
func (u *Unsubscribe) apply(ctx context.Context, token string, all bool) error {
	c, err := u.Signer.Verify(token)
	if errors.Is(err, unsubscribe.ErrInvalid) {
		obs.Metric(ctx, u.Log, map[string]string{"Outcome": "invalid_token"}, map[string]float64{"Unsubscribes": 1})
		u.Log.WarnContext(ctx, "unsubscribe with an invalid token; ignored")
		return nil
	}
	all = all || c.Scope == unsubscribe.ScopeAll
	if err := u.Recipients.Unsubscribe(ctx, c.RecipientID, c.Scope, all); err != nil {
		return err
	}
	scope := "repository"
	if all {
		scope = "all"
	}
	obs.Metric(ctx, u.Log, map[string]string{"Outcome": "recorded", "Scope": scope}, map[string]float64{"Unsubscribes": 1})
	u.Log.InfoContext(ctx, "unsubscribe recorded", "recipient_id", c.RecipientID, "scope", scope)
	return nil
}

func (u *Unsubscribe) page(name string, data any) events.APIGatewayV2HTTPResponse {
	var b bytes.Buffer
	t := unsubscribePages
	if name != "confirm" {
		t = unsubscribePages.Lookup(name)
	}
	if err := t.Execute(&b, data); err != nil {
		return problem(http.StatusInternalServerError, "", "could not render the page")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: b.String(), Headers: map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
		"X-Robots-Tag": "noindex", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
	}}
}

// unsubscribeToken takes the token from /unsubscribe/{token}.
func unsubscribeToken(path string) (string, bool) {
	t, ok := strings.CutPrefix(path, "/unsubscribe/")
	return t, ok && t != "" && !strings.Contains(t, "/")
}
