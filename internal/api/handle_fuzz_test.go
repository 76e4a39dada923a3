package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/webhook"
)

// The webhook secrets of the recorded intake events in events/: the local
// stack's, one per source (internal/devstack's Local… constants).
const (
	fuzzGenericSecret = "local-generic-webhook-secret-not-for-production"
	fuzzGitHubSecret  = "local-github-webhook-secret-not-for-production"
	fuzzGitLabToken   = "local-gitlab-webhook-token-not-for-production"
	fuzzGerritToken   = "local-gerrit-webhook-token-not-for-production"
)

// fuzzHeaders turns "name: value" lines into API Gateway's lower-cased map.
func fuzzHeaders(lines string) map[string]string {
	h := map[string]string{}
	for line := range strings.SplitSeq(lines, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	return h
}

// FuzzHandleWebhook drives the HTTP surface with the recorded API Gateway
// intake events (events/intake-*.json) and mutations of their method,
// path, headers, query token and body. Requests the adapter accepts would
// go on to the store and are left to the e2e tests; for everything else:
// Handle never panics and never answers 5xx; the status is the adapter's
// (webhook.Status, 202 for a skipped event); every error answer is a JSON
// Problem whose error code matches the status and whose field is the
// adapter's FieldError field; a base64-encoded body (isBase64Encoded, as
// API Gateway sends binary media) is answered exactly like the raw body;
// and no answer contains the webhook secret unless the request did.
func FuzzHandleWebhook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "events", "intake-*.json"))
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			f.Fatal(err)
		}
		var lines []string
		for k, v := range req.Headers {
			lines = append(lines, k+": "+v)
		}
		hdr := strings.Join(lines, "\n")
		token := req.QueryStringParameters["token"]
		f.Add(req.RequestContext.HTTP.Method, req.RawPath, hdr, token, []byte(req.Body), false)
		f.Add(req.RequestContext.HTTP.Method, req.RawPath, hdr, token, []byte(strings.Replace(req.Body, "1", "2", 1)), true)
		f.Add("GET", req.RawPath, hdr, token, []byte(req.Body), false)
	}
	f.Add("POST", "/webhooks/bitbucket", "", "", []byte("{}"), false)
	f.Add("GET", "/healthz", "", "", []byte(nil), false)
	f.Add("DELETE", "/", "x-github-event: ping", "", []byte("\xff"), false)

	h := testHandler(map[string]Parser{
		"generic": webhook.Generic{Secret: []byte(fuzzGenericSecret)},
		"github":  webhook.GitHub{Secret: []byte(fuzzGitHubSecret)},
		"gitlab":  webhook.GitLab{Token: []byte(fuzzGitLabToken)},
		"gerrit":  webhook.Gerrit{Token: []byte(fuzzGerritToken)},
	})
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, method, path, headerLines, token string, body []byte, resign bool) {
		if strings.HasPrefix(path, "/jobs/") {
			return // reads the store; tested end to end
		}
		headers := fuzzHeaders(headerLines)
		if resign {
			headers["x-criticizer-signature"] = webhook.Sign([]byte(fuzzGenericSecret), body)
			headers["x-hub-signature-256"] = webhook.Sign([]byte(fuzzGitHubSecret), body)
		}
		req := events.APIGatewayV2HTTPRequest{RawPath: path, Headers: headers, Body: string(body),
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}}
		if token != "" {
			req.QueryStringParameters = map[string]string{"token": token}
		}

		// What the adapter says, when the request reaches one.
		source, isWebhook := strings.CutPrefix(path, "/webhooks/")
		p, configured := h.Sources[source]
		var adapterErr error
		if isWebhook && configured && method == http.MethodPost {
			hf := headerFunc(headers)
			if source == "gerrit" {
				hf = gerritHeader(hf, req.QueryStringParameters)
			}
			r := webhook.Request{Header: hf, Body: body}
			if ep, ok := p.(EventParser); ok {
				ev, err := ep.ParseEvent(r)
				if err == nil && ev.Skip == "" {
					return // would create a job
				}
				if err == nil {
					err = &webhook.SkipError{Reason: ev.Skip}
				}
				adapterErr = err
			} else if _, adapterErr = p.Parse(r); adapterErr == nil {
				return // would create a job
			}
		}

		resp, err := h.Handle(ctx, req)
		if err != nil {
			t.Fatalf("Handle returned an error to Lambda: %v", err)
		}
		if resp.StatusCode >= 500 || resp.StatusCode < 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
		}
		if resp.Headers["Content-Type"] != "application/json" || !json.Valid([]byte(resp.Body)) {
			t.Fatalf("not a JSON answer: %v %q", resp.Headers, resp.Body)
		}
		if adapterErr != nil {
			if want := webhook.Status(adapterErr); resp.StatusCode != want {
				t.Fatalf("status %d, adapter error %v maps to %d", resp.StatusCode, adapterErr, want)
			}
		}
		if resp.StatusCode >= 400 {
			var pr Problem
			if err := json.Unmarshal([]byte(resp.Body), &pr); err != nil || pr.Error != errorCode(resp.StatusCode) || pr.Message == "" {
				t.Fatalf("status %d with body %q: not a Problem", resp.StatusCode, resp.Body)
			}
			if fe, ok := errors.AsType[*webhook.FieldError](adapterErr); ok && pr.Field != fe.Field {
				t.Fatalf("problem field %q, adapter field %q", pr.Field, fe.Field)
			}
		}
		request := method + path + headerLines + token + string(body)
		for _, secret := range []string{fuzzGenericSecret, fuzzGitHubSecret, fuzzGitLabToken, fuzzGerritToken} {
			if !strings.Contains(request, secret) && strings.Contains(resp.Body, secret) {
				t.Fatalf("answer leaks the webhook secret: %s", resp.Body)
			}
		}

		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		again, _ := h.Handle(ctx, req)
		if !reflect.DeepEqual(again, resp) {
			t.Fatalf("base64 body answered differently:\n raw %+v\nbase64 %+v", resp, again)
		}
	})
}
