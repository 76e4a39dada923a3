package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/webhook"
)

// refusingParser refuses every webhook: enough to show the route reaches
// its source's adapter.
type refusingParser struct{}

func (refusingParser) Parse(webhook.Request) (webhook.Change, error) {
	return webhook.Change{}, errors.New("refused")
}

type stubPages struct{}

func (stubPages) UnsubscribePage(action string) ([]byte, error) { return []byte(action), nil }
func (stubPages) UnsubscribedPage(bool) ([]byte, error)         { return []byte("done"), nil }

type stubVotePages struct{}

func (stubVotePages) VotePage(action, _ string) ([]byte, error) { return []byte(action), nil }
func (stubVotePages) VotedPage(string) ([]byte, error)          { return []byte("done"), nil }
func (stubVotePages) VoteRefusedPage(bool) ([]byte, error)      { return []byte("refused"), nil }

// downTransport fails every call below the SDK: GET /jobs/{id} with a
// valid link reaches the store and answers 503.
type downTransport struct{}

func (downTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dynamodb is down")
}

const routesJobID = "j_z2gouxrwnmny4kqfprlb54aovpn5wnps"

// routesHandler is a Handler with every part configured: every source,
// the admin API with its key and directory, unsubscribe links, status
// links.
func routesHandler(t *testing.T) *Handler {
	t.Helper()
	sources := map[string]Parser{}
	for _, s := range job.Sources() {
		sources[s] = refusingParser{}
	}
	h := adminHandler(testAdminKey, fakePreviewer{}, nil)
	h.Sources = sources
	h.Admin.Directory = memstore.NewDirectory(nil)
	h.Admin.Learnings = memstore.NewLearnings()
	signer, err := unsubscribe.NewSigner(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	h.Unsubscribe = &Unsubscribe{Signer: signer, Pages: stubPages{}, Log: h.Log}
	h.Status = NewStatusLinks(strings.Repeat("s", 40))
	votes, err := vote.NewSigner(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	h.Votes = &Votes{Signer: votes, Store: memstore.NewVotes(), Pages: stubVotePages{}, Log: h.Log}
	ps, err := prefs.NewSigner(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	h.Preferences = &Preferences{Signer: ps, Store: memstore.NewPreferences(), Pages: &mail.Renderer{}, Log: h.Log}
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{},
		BaseEndpoint: aws.String("http://127.0.0.1:1"), RetryMaxAttempts: 1, HTTPClient: &http.Client{Transport: downTransport{}}})
	h.Jobs = dynamo.NewJobs(db, "jobs", nil)
	return h
}

// instantiate fills a route's path parameters with values its handler
// accepts ({name+} gets two segments).
func instantiate(path string) string {
	return strings.NewReplacer("{id}", routesJobID, "{token}", "t0ken", "{template+}", "critique/v3.html",
		"{source}", "github", "{username}", "octocat").Replace(path)
}

// matches reports whether API Gateway would route path to a route with
// pattern p: {name} is one non-empty segment, a last {name+} one or more.
func matches(p, path string) bool {
	ps, xs := strings.Split(p, "/"), strings.Split(path, "/")
	for i, seg := range ps {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "+}") {
			return i == len(ps)-1 && len(xs) > i && !slices.Contains(xs[i:], "")
		}
		if i >= len(xs) {
			return false
		}
		if strings.HasPrefix(seg, "{") {
			if xs[i] == "" {
				return false
			}
		} else if seg != xs[i] {
			return false
		}
	}
	return len(xs) == len(ps)
}

// served sends one request as API Gateway would hand it over (the admin
// key in X-Api-Key, where SigV4 leaves room for it) and reports whether
// Handle serves it: any answer but 404 or 405.
func served(t *testing.T, h *Handler, method, path string) (bool, events.APIGatewayV2HTTPResponse) {
	t.Helper()
	r := adminReq(method, path, map[string]string{"X-Api-Key": testAdminKey}, "{}")
	if method == http.MethodGet && path == "/jobs/"+routesJobID {
		r.QueryStringParameters = map[string]string{"token": h.Status.token(job.ID(routesJobID))}
	}
	resp, err := h.Handle(context.Background(), r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed, resp
}

// TestRoutes_TableIsWhatHandleServes: deploy.Routes(), the routes the
// deployment deploys, is exactly what Handle serves. Every route in the table, its parameters filled, gets an answer
// other than 404 or 405 from a fully configured handler; and every
// method on every path near a route (the table's own, one segment more or
// less, unknown names beside known ones) that Handle serves is matched by
// a route in the table, with API Gateway's matching. Both templates are
// rendered from the table (internal/deploy/cfn's TestRoutesDeployed,
// R-DEPLOY-1).
func TestRoutes_TableIsWhatHandleServes(t *testing.T) {
	h := routesHandler(t)
	routes := deploy.Routes()
	seen := map[string]bool{}
	for _, r := range routes {
		key := r.Method + " " + r.Path
		if seen[key] {
			t.Errorf("%s listed twice", key)
		}
		seen[key] = true
		if want := strings.HasPrefix(r.Path, adminPrefix); r.IAM != want {
			t.Errorf("%s: IAM %v; IAM is for /admin/* routes and only them", key, r.IAM)
		}
		if ok, resp := served(t, h, r.Method, instantiate(r.Path)); !ok {
			t.Errorf("%s is in the table but Handle answers %d %s", key, resp.StatusCode, resp.Body)
		}
	}

	candidates := map[string]bool{"/": true, "/webhooks/bogus": true, "/admin/bogus": true, "/status": true}
	for _, r := range routes {
		p := instantiate(r.Path)
		candidates[p] = true
		candidates[p+"/x"] = true
		candidates[p+"/"] = true
		if i := strings.LastIndex(p, "/"); i > 0 {
			candidates[p[:i]] = true
			candidates[p[:i]+"/"] = true
		}
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
	n := 0
	for path := range candidates {
		for _, m := range methods {
			ok, resp := served(t, h, m, path)
			if !ok {
				continue
			}
			n++
			if !slices.ContainsFunc(routes, func(r deploy.Route) bool { return r.Method == m && matches(r.Path, path) }) {
				t.Errorf("Handle serves %s %s (%d %s), which no route in deploy.Routes() matches: on AWS it would be API Gateway's 404",
					m, path, resp.StatusCode, resp.Body)
			}
		}
	}
	if n < len(routes) {
		t.Errorf("%d served requests among the candidates, want at least one per route (%d)", n, len(routes))
	}
}

// The matcher the test relies on follows API Gateway's rules.
func TestRoutes_Matches(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/jobs/{id}", "/jobs/j_1", true},
		{"/jobs/{id}", "/jobs/", false},
		{"/jobs/{id}", "/jobs/a/b", false},
		{"/admin/previews/{template+}", "/admin/previews/a/b", true},
		{"/admin/previews/{template+}", "/admin/previews/", false},
		{"/admin/previews/{template+}", "/admin/previews", false},
		{"/healthz", "/healthz", true},
		{"/healthz", "/healthz/", false},
		{"/admin/directory/{source}/{username}", "/admin/directory/github", false},
	} {
		if got := matches(tc.pattern, tc.path); got != tc.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}
