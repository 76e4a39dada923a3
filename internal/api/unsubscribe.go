package api

import (
	"context"
	"errors"
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
// List-Unsubscribe header and footer (RFC 8058, R-UNSUB-1).
//
//   - POST from a mail client's one-click button (body
//     "List-Unsubscribe=One-Click") unsubscribes from the token's scope and
//     answers 200 with an empty body, as RFC 8058 requires.
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
	Recipients store.Preferences
	Pages      UnsubscribePages
	Log        *slog.Logger
}

// UnsubscribePages renders the endpoint's two pages (the mail renderer's
// unsubscribe/v1 and unsubscribed/v1 templates, previewed with the others).
type UnsubscribePages interface {
	UnsubscribePage(action string) ([]byte, error)
	UnsubscribedPage(all bool) ([]byte, error)
}

func (u *Unsubscribe) handle(ctx context.Context, method, token string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if u == nil || u.Signer == nil {
		return problem(http.StatusNotFound, "path", "unsubscribe links are not configured")
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return u.page(u.Pages.UnsubscribePage("/unsubscribe/" + url.PathEscape(token)))
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
		return u.page(u.Pages.UnsubscribedPage(all))
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
	// Leaving a repository is muting it: the one set the preference page
	// shows and edits.
	if all {
		err = u.Recipients.UnsubscribeAll(ctx, c.RecipientID)
	} else {
		err = u.Recipients.Mute(ctx, c.RecipientID, c.Scope)
	}
	if err != nil {
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

func (u *Unsubscribe) page(body []byte, err error) events.APIGatewayV2HTTPResponse {
	if err != nil {
		u.Log.Error("unsubscribe page not rendered", "error", err)
		return problem(http.StatusInternalServerError, "", "could not render the page")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: string(body), Headers: map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
		"X-Robots-Tag": "noindex", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
	}}
}

// unsubscribeToken takes the token from /unsubscribe/{token}.
func unsubscribeToken(path string) (string, bool) {
	t, ok := strings.CutPrefix(path, "/unsubscribe/")
	return t, ok && t != "" && !strings.Contains(t, "/")
}
