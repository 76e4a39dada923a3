package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
)

// Preferences serves /preferences/{token}: the preference page every
// email's footer links (R-PREF-2).
//
//   - GET (and HEAD) answers the page, filled from the recipient's
//     record. It changes nothing: mail scanners fetch every link of a
//     message, and a page that saved on GET would be set by them.
//   - POST saves the page's form whole, on the revision the page was
//     rendered from (R-PREF-1), and answers the page again saying so. A
//     field missing, repeated, unknown or out of range is a 400 naming
//     it; a save from a page older than the record (another tab, a
//     one-click unsubscribe since) is a 409 showing the record as it is
//     now; nothing is saved in either case.
//   - A link that does not verify is refused (403), one past its expiry
//     too (410), as vote links are: the token names a recipient only by
//     an opaque id, so "not valid" tells a caller nothing.
//
// A client that asks for JSON (Accept: application/json, not text/html)
// gets the record, or a Problem naming the field, instead of a page.
type Preferences struct {
	Signer *prefs.Signer // nil: preference links are off (404)
	Store  store.Preferences
	Pages  PreferencePages
	Log    *slog.Logger
	Now    func() time.Time
}

// PreferencePages renders the endpoint's pages (internal/mail).
type PreferencePages interface {
	PreferencesHTML(p mail.PreferencesPage) ([]byte, error)
	PreferencesRefusedHTML(expired bool) ([]byte, error)
}

// PreferencesJSON is the record as a JSON client reads it.
type PreferencesJSON struct {
	Mode            string   `json:"mode"`
	DigestHour      int      `json:"digest_hour"`
	TimeZone        string   `json:"time_zone"`
	MinSeverity     string   `json:"min_severity"`
	Muted           []string `json:"muted"`
	UnsubscribedAll bool     `json:"unsubscribed_all"`
	Rev             int      `json:"rev"`
}

func (h *Preferences) handle(ctx context.Context, method, token string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if h == nil || h.Signer == nil || h.Store == nil {
		return problem(http.StatusNotFound, "path", "preference links are not configured")
	}
	if method != http.MethodGet && method != http.MethodHead && method != http.MethodPost {
		return methodNotAllowed("GET, HEAD, POST")
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	asJSON := wantsJSON(headerFunc(req.Headers)("Accept"))
	c, err := h.Signer.Verify(token, now())
	if err != nil {
		expired := errors.Is(err, prefs.ErrExpired)
		status, outcome := http.StatusForbidden, "invalid_token"
		if expired {
			status, outcome = http.StatusGone, "expired"
		}
		if method == http.MethodPost {
			h.count(ctx, outcome, "")
			h.Log.WarnContext(ctx, "preferences refused", "outcome", outcome)
		}
		if asJSON {
			return problem(status, "token", pick(expired, "this preference link has expired", "this preference link is not valid"))
		}
		body, err := h.Pages.PreferencesRefusedHTML(expired)
		return h.page(ctx, status, body, err)
	}
	current, err := h.Store.Preferences(ctx, c.RecipientID)
	if err != nil {
		h.Log.ErrorContext(ctx, "preferences not read", "error", err)
		return problem(http.StatusServiceUnavailable, "", "could not read the preferences; try again")
	}
	view := mail.PreferencesPage{Action: prefs.Path(url.PathEscape(token)), LinkRepository: c.Repository}
	if method != http.MethodPost {
		return h.answer(ctx, http.StatusOK, view, current, asJSON)
	}
	body, err := decodeBody(req)
	if err != nil {
		return h.refuse(ctx, view, current, &prefs.FieldError{Field: "body", Message: "not valid base64"}, asJSON)
	}
	next, err := prefs.ParseForm(body, current, c.Repository)
	var fe *prefs.FieldError
	if errors.As(err, &fe) {
		return h.refuse(ctx, view, current, fe, asJSON)
	}
	saved, err := h.Store.SavePreferences(ctx, c.RecipientID, next)
	switch {
	case errors.As(err, &fe): // cannot happen after ParseForm; kept as the store's own guard
		return h.refuse(ctx, view, current, fe, asJSON)
	case errors.Is(err, store.ErrConflict):
		h.count(ctx, "conflict", "")
		h.Log.InfoContext(ctx, "preferences not saved: the page was stale", "recipient_id", c.RecipientID, "rev", next.Rev)
		if now, err := h.Store.Preferences(ctx, c.RecipientID); err == nil {
			current = now
		}
		if asJSON {
			return problem(http.StatusConflict, prefs.FieldRev, "the preferences changed since revision "+strconv.Itoa(next.Rev)+"; read them again")
		}
		view.Conflict = true
		return h.answer(ctx, http.StatusConflict, view, current, false)
	case err != nil:
		h.Log.ErrorContext(ctx, "preferences not saved", "error", err)
		return problem(http.StatusServiceUnavailable, "", "could not save the preferences; try again")
	}
	h.count(ctx, "saved", "")
	h.Log.InfoContext(ctx, "preferences saved", "recipient_id", c.RecipientID, "rev", saved.Rev, "mode", saved.Mode,
		"min_severity", saved.MinSeverity, "muted", len(saved.Muted), "unsubscribed_all", saved.UnsubscribedAll)
	view.Saved = true
	return h.answer(ctx, http.StatusOK, view, saved, asJSON)
}

// refuse answers a form refused for field e: 400, nothing saved.
func (h *Preferences) refuse(ctx context.Context, view mail.PreferencesPage, current prefs.Preferences, e *prefs.FieldError, asJSON bool) events.APIGatewayV2HTTPResponse {
	h.count(ctx, "invalid_field", e.Field)
	h.Log.InfoContext(ctx, "preferences refused", "outcome", "invalid_field", "field", quote(e.Field))
	if asJSON {
		return problem(http.StatusBadRequest, e.Field, e.Message)
	}
	view.Error = e
	return h.answer(ctx, http.StatusBadRequest, view, current, false)
}

// answer renders the page (or the JSON record) for p.
func (h *Preferences) answer(ctx context.Context, status int, view mail.PreferencesPage, p prefs.Preferences, asJSON bool) events.APIGatewayV2HTTPResponse {
	if asJSON {
		muted := p.Muted
		if muted == nil {
			muted = []string{}
		}
		return jsonResponse(status, PreferencesJSON{Mode: string(p.Mode), DigestHour: p.DigestHour, TimeZone: p.TimeZone, MinSeverity: p.MinSeverity,
			Muted: muted, UnsubscribedAll: p.UnsubscribedAll, Rev: p.Rev}, map[string]string{"Cache-Control": "no-store"})
	}
	view.Preferences = p
	view.Offered = prefs.Offered(p, view.LinkRepository)
	view.Zones = prefs.Zones(p.TimeZone)
	body, err := h.Pages.PreferencesHTML(view)
	return h.page(ctx, status, body, err)
}

// count emits the Preferences metric: each POST by outcome (saved,
// invalid_field with the field, conflict, invalid_token, expired).
func (h *Preferences) count(ctx context.Context, outcome, field string) {
	dims := map[string]string{"Outcome": outcome}
	if field != "" {
		if _, known := preferenceFields[field]; !known {
			field = "other" // a metric dimension is never what a caller wrote
		}
		dims["Field"] = field
	}
	obs.Metric(ctx, h.Log, dims, map[string]float64{"PreferenceSaves": 1})
}

// preferenceFields are the fields a refusal may name as a metric
// dimension.
var preferenceFields = map[string]struct{}{
	prefs.FieldRev: {}, prefs.FieldMode: {}, prefs.FieldDigestHour: {}, prefs.FieldTimeZone: {}, prefs.FieldMinSeverity: {},
	prefs.FieldMute: {}, prefs.FieldUnsubscribeAll: {}, "body": {},
}

// page answers an HTML page with the headers of every link page (no
// caching, no referrer: the path holds the token), and, since this one
// holds a form that changes settings, no framing and no sniffing.
func (h *Preferences) page(ctx context.Context, status int, body []byte, err error) events.APIGatewayV2HTTPResponse {
	if err != nil {
		h.Log.ErrorContext(ctx, "preference page not rendered", "error", err)
		return problem(http.StatusInternalServerError, "", "could not render the page")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(body), Headers: map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
		"X-Robots-Tag": "noindex", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	}}
}

// wantsJSON reports whether an Accept header asks for JSON rather than a
// page (a browser's asks for text/html first).
func wantsJSON(accept string) bool {
	a := strings.ToLower(accept)
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

// preferencesToken takes the token from /preferences/{token}.
func preferencesToken(path string) (string, bool) {
	t, ok := strings.CutPrefix(path, "/preferences/")
	return t, ok && t != "" && !strings.Contains(t, "/")
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
