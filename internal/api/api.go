// Package api is the HTTP surface behind API Gateway (HTTP API, payload
// format 2.0): webhook intake, job status, health and the admin API. It speaks
// events.APIGatewayV2HTTPRequest so the same handler runs in Lambda and in
// the local runner.
package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Parser is one webhook source's adapter.
type Parser interface {
	Parse(r webhook.Request) (webhook.Change, error)
}

// EventParser is the adapter of a code review system (GitHub, GitLab,
// Gerrit): besides the Change it reports the repository, change number,
// head commit and reviewers, or why the request needs no review. A Parser
// in Handler.Sources that is also an EventParser is used as one.
type EventParser interface {
	ParseEvent(r webhook.Request) (webhook.Event, error)
}

// Handler serves every route.
type Handler struct {
	Sources    map[string]Parser // by the {source} path segment; configured sources only
	Intake     *Intake
	Jobs       store.Jobs
	Deliveries store.Deliveries
	Log        *slog.Logger
	// Unsubscribe serves /unsubscribe/{token}; nil answers 404.
	Unsubscribe *Unsubscribe
	// Votes serves /vote/{token}; nil answers 404.
	Votes *Votes
	// Preferences serves /preferences/{token}; nil answers 404.
	Preferences *Preferences
	// Admin serves /admin/*; nil or without a key, those routes do not
	// exist (404).
	Admin *Admin
	// Ready reports whether dependencies answer; nil means always ready.
	Ready func(ctx context.Context) error
	// Status checks the tokens of job status links (GET /jobs/{id}); nil:
	// the route answers 404 to all but the admin API key.
	Status *StatusLinks
}

// Handle routes one request. It never returns an error to Lambda: every
// failure is an HTTP response, so API Gateway never answers a bare 500.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	method := req.RequestContext.HTTP.Method
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	switch {
	case path == "/healthz" && method == http.MethodGet:
		return h.health(ctx), nil
	case strings.HasPrefix(path, "/webhooks/"):
		if method != http.MethodPost {
			return methodNotAllowed(http.MethodPost), nil
		}
		source := strings.TrimPrefix(path, "/webhooks/")
		p, ok := h.Sources[source]
		if !ok {
			// A known source (job.Sources) missing from h.Sources is not
			// configured (no webhook secret).
			for _, k := range job.Sources() {
				if k == source {
					return problem(http.StatusNotFound, "source", "source not configured: "+quote(source)), nil
				}
			}
			return problem(http.StatusNotFound, "source", "unknown webhook source "+quote(source)), nil
		}
		body, err := decodeBody(req)
		if err != nil {
			return problem(http.StatusBadRequest, "body", "body is not valid base64"), nil
		}
		header := headerFunc(req.Headers)
		if source == "gerrit" {
			header = gerritHeader(header, req.QueryStringParameters)
		}
		return h.Intake.Handle(ctx, p, webhook.Request{Header: header, Body: body}), nil
	case strings.HasPrefix(path, "/unsubscribe/"):
		token, ok := unsubscribeToken(path)
		if !ok {
			return problem(http.StatusNotFound, "token", "no unsubscribe token in the path"), nil
		}
		return h.Unsubscribe.handle(ctx, method, token, req), nil
	case strings.HasPrefix(path, "/vote/"):
		token, ok := voteToken(path)
		if !ok {
			return problem(http.StatusNotFound, "token", "no vote token in the path"), nil
		}
		return h.Votes.handle(ctx, method, token), nil
	case strings.HasPrefix(path, "/preferences/"):
		token, ok := preferencesToken(path)
		if !ok {
			return problem(http.StatusNotFound, "token", "no preference token in the path"), nil
		}
		return h.Preferences.handle(ctx, method, token, req), nil
	case strings.HasPrefix(path, "/jobs/"):
		if method != http.MethodGet {
			return methodNotAllowed(http.MethodGet), nil
		}
		return h.getJob(ctx, strings.TrimPrefix(path, "/jobs/"), req), nil
	case strings.HasPrefix(path, adminPrefix):
		return h.Admin.handle(ctx, req, method, path), nil
	}
	return noRoute(method, path), nil
}

func (h *Handler) health(ctx context.Context) events.APIGatewayV2HTTPResponse {
	if h.Ready != nil {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := h.Ready(ctx); err != nil {
			h.Log.WarnContext(ctx, "not ready", "error", err)
			return jsonResponse(http.StatusServiceUnavailable, map[string]string{"status": "unavailable"}, nil)
		}
	}
	return jsonResponse(http.StatusOK, map[string]string{"status": "ok"}, nil)
}

// headerFunc looks headers up case-insensitively. API Gateway v2 lower-cases
// names; the local runner does the same.
func headerFunc(h map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := h[strings.ToLower(name)]; ok {
			return v
		}
		for k, v := range h {
			if strings.EqualFold(k, name) {
				return v
			}
		}
		return ""
	}
}

// gerritHeader serves the Gerrit adapter's X-Criticizer-Query-Token
// pseudo-header from the URL's token query parameter (the webhooks plugin
// cannot send custom headers, so the hook URL ends in ?token=<secret>).
// The pseudo-header is only ever the query parameter: a client sending it
// as a real header is ignored.
func gerritHeader(h func(string) string, query map[string]string) func(string) string {
	token := query["token"]
	return func(name string) string {
		if strings.EqualFold(name, webhook.GerritQueryTokenHeader) {
			return token
		}
		return h(name)
	}
}

func decodeBody(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if req.IsBase64Encoded {
		return base64.StdEncoding.DecodeString(req.Body)
	}
	return []byte(req.Body), nil
}

// Problem is the JSON error body: it names the field at fault.
type Problem struct {
	Error   string `json:"error"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func problem(status int, field, msg string) events.APIGatewayV2HTTPResponse {
	return jsonResponse(status, Problem{Error: errorCode(status), Field: field, Message: msg}, nil)
}

func errorCode(status int) string {
	return strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
}

func methodNotAllowed(allow string) events.APIGatewayV2HTTPResponse {
	return jsonResponse(http.StatusMethodNotAllowed, Problem{Error: "method_not_allowed", Message: "use " + allow}, map[string]string{"Allow": allow})
}

func jsonResponse(status int, v any, headers map[string]string) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"internal_server_error","message":"could not encode the response"}`)
		status = http.StatusInternalServerError
	}
	return rawResponse(status, b, headers)
}

func rawResponse(status int, body []byte, headers map[string]string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(body)}
}

// quote bounds user-supplied text echoed in an error.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
