package fetch

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/source"
)

// The fetch stage's GitHub fetcher calls the API with the static token,
// or, with a GitHub App configured, with an installation token the App
// minted: never both, never neither.
// Rules: R-SOURCE-4.
func TestGitHub_AppConfiguredFetchesWithAnInstallationToken(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	auths := map[string]string{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths[r.Method+" "+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		switch r.URL.Path {
		case "/app/installations/42/access_tokens":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"token":"ghs_installation","expires_at":"2099-01-01T00:00:00Z"}`))
		case "/repos/o/r/compare/b...h":
			w.Write([]byte("diff --git a/x b/x\n"))
		case "/repos/o/r/pulls/1/requested_reviewers":
			w.Write([]byte(`{"users":[],"teams":[]}`))
		case "/repos/o/r/pulls/1/reviews":
			w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	ref := source.Ref{Source: "github", Repo: "o/r", Number: 1, BaseSHA: "b", HeadSHA: "h"}
	run := func(gh config.GitHub) map[string]string {
		t.Helper()
		mu.Lock()
		clear(auths)
		mu.Unlock()
		gh.APIURL = api.URL
		if _, err := GitHub(config.Config{GitHub: gh}, time.Now).Fetch(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(auths)
	}

	got := run(config.GitHub{Token: "ghp_static"})
	if got["GET /repos/o/r/compare/b...h"] != "Bearer ghp_static" || len(got) != 3 {
		t.Fatalf("static token: %v", got)
	}
	key := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	got = run(config.GitHub{App: config.GitHubApp{ID: "12345", InstallationID: "42", PrivateKey: key}})
	if !strings.HasPrefix(got["POST /app/installations/42/access_tokens"], "Bearer ey") {
		t.Fatalf("the token was not minted with the App's JWT: %v", got)
	}
	for _, p := range []string{"GET /repos/o/r/compare/b...h", "GET /repos/o/r/pulls/1/requested_reviewers", "GET /repos/o/r/pulls/1/reviews"} {
		if got[p] != "Bearer ghs_installation" {
			t.Errorf("%s sent with %q, want the installation token", p, got[p])
		}
	}
}
