package source

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/criticizer/criticizer/internal/retry"
)

// appKey is a fresh App private key, PEM as GitHub issues them (PKCS #1).
func appKey(t *testing.T) (string, *rsa.PrivateKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})), k
}

// appWorld is what each App test starts from: a generated key as the
// App's private key (parsed from its PEM, as the secret holds it) and as
// the fake GitHub's check of the JWT, a clock at testNow, and the fake
// GitHub API.
func appWorld(t *testing.T) (parsed, key *rsa.PrivateKey, clock *appClock, f *fakeAPI) {
	t.Helper()
	pemKey, key := appKey(t)
	parsed, err := ParseGitHubAppKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	f, _ = ghServer(t)
	return parsed, key, &appClock{t: testNow}, f
}

// appClock is a clock a test moves.
type appClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *appClock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *appClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// tokenEndpoint stands in for POST /app/installations/{id}/access_tokens:
// it checks the App's JWT (RS256 under the App's key, issued by the App
// 60 s back, expiring 9 minutes on) and answers a new token, valid an hour
// by clock, each call; mints counts the calls.
func tokenEndpoint(t *testing.T, key *rsa.PrivateKey, clock *appClock, mints *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		now := clock.now()
		var claims jwt.RegisteredClaims
		_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithIssuer("12345"))
		if !ok || err != nil || !claims.IssuedAt.Equal(now.Add(-60*time.Second)) || !claims.ExpiresAt.Equal(now.Add(9*time.Minute)) {
			t.Errorf("App JWT refused: %v (iat %v, exp %v, now %v)", err, claims.IssuedAt, claims.ExpiresAt, now)
			http.Error(w, `{"message":"A JSON web token could not be decoded"}`, http.StatusUnauthorized)
			return
		}
		n := mints.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"ghs_minted%d","expires_at":%q,"permissions":{"pull_requests":"read","members":"read"},"repository_selection":"all"}`,
			n, now.Add(time.Hour).Format(time.RFC3339))
	}
}

// appFetcher is the GitHub fetcher of ghServer authenticated by app, as
// the fetch stage builds it.
func appFetcher(f *fakeAPI, app *GitHubApp) *GitHub {
	app.BaseURL, app.Client = f.srv.URL+"/api/v3", f.srv.Client()
	return &GitHub{BaseURL: f.srv.URL + "/api/v3/", Now: app.Now,
		Client: &http.Client{Transport: &GitHubAppTransport{App: app, Base: f.srv.Client().Transport}}}
}

// authsOf returns the Authorization of each request to the pull request
// since from.
func authsOf(f *fakeAPI, from int) []string {
	var out []string
	for _, r := range f.requests()[from:] {
		if strings.Contains(r.URL.Path, "/repos/Codertocat/Hello-World/pulls/") {
			out = append(out, r.Header.Get("Authorization"))
		}
	}
	return out
}

// GitHub App credentials: the fetcher's requests carry an installation
// token, minted once and reused while more than 5 minutes of it are left
// (an hour's token, 54 minutes on), then minted again (56 minutes on), by
// an injected clock.
// Rules: R-SOURCE-4.
func TestGitHubApp_InstallationTokenMintedOnceReusedRefreshedNearExpiry(t *testing.T) {
	parsed, key, clock, f := appWorld(t)
	var mints atomic.Int32
	f.on("POST /api/v3/app/installations/42/access_tokens", tokenEndpoint(t, key, clock, &mints))
	gh := appFetcher(f, &GitHubApp{AppID: "12345", InstallationID: 42, Key: parsed, Now: clock.now})

	fetch := func(want string) {
		t.Helper()
		from := len(f.requests())
		if _, err := gh.Fetch(context.Background(), ghRef); err != nil {
			t.Fatal(err)
		}
		for _, a := range authsOf(f, from) {
			if a != "Bearer "+want {
				t.Fatalf("a request was sent with %q, want the installation token %s", a, want)
			}
		}
	}
	fetch("ghs_minted1")
	clock.advance(54 * time.Minute) // 6 minutes left
	fetch("ghs_minted1")
	if n := mints.Load(); n != 1 {
		t.Fatalf("%d tokens minted for two fetches within the token's life, want 1", n)
	}
	clock.advance(2 * time.Minute) // 4 minutes left: too close
	fetch("ghs_minted2")
	if n := mints.Load(); n != 2 {
		t.Fatalf("%d tokens minted, want a second one near expiry", n)
	}
}

// Concurrent requests for one installation share one mint; a token
// GitHub refuses (401: revoked) is dropped, so the retry mints another
// instead of failing until it expires.
// Rules: R-SOURCE-4.
func TestGitHubApp_ConcurrentRequestsShareOneMint_RefusedTokenDropped(t *testing.T) {
	parsed, key, clock, f := appWorld(t)
	var mints atomic.Int32
	f.on("POST /api/v3/app/installations/42/access_tokens", tokenEndpoint(t, key, clock, &mints))
	app := &GitHubApp{AppID: "12345", InstallationID: 42, Key: parsed, Now: clock.now}
	gh := appFetcher(f, app)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := gh.Reviewers(context.Background(), ghRef); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := mints.Load(); n != 1 {
		t.Fatalf("%d mints for 8 concurrent requests, want 1", n)
	}

	f.on(ghRevs, reply(401, fixture(t, "github/bad_credentials.json"), "Content-Type", "application/json; charset=utf-8"))
	_, err := gh.Reviewers(context.Background(), ghRef)
	if re, ok := errors.AsType[*retry.Error](err); !ok || re.Class != retry.AuthDenied {
		t.Fatalf("refused token: %v, want AUTH_DENIED", err)
	}
	f.on(ghRevs, reply(200, fixture(t, "github/requested_reviewers.json"), "Content-Type", "application/json; charset=utf-8"))
	if _, err := gh.Reviewers(context.Background(), ghRef); err != nil {
		t.Fatal(err)
	}
	if n := mints.Load(); n != 2 {
		t.Fatalf("%d mints, want a new token after the 401", n)
	}
}

// Without an installation id, the installation is looked up once per
// owner (GET /repos/{owner}/{repo}/installation) and remembered; a key
// that is not a PEM RSA key is refused without being quoted.
// Rules: R-SOURCE-4.
func TestGitHubApp_InstallationLookedUpPerOwner(t *testing.T) {
	parsed, key, clock, f := appWorld(t)
	var mints atomic.Int32
	var lookups atomic.Int32
	f.on("GET /api/v3/repos/Codertocat/Hello-World/installation", func(w http.ResponseWriter, r *http.Request) {
		lookups.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": 42, "account": map[string]any{"login": "Codertocat"}, "app_id": 12345})
	})
	f.on("POST /api/v3/app/installations/42/access_tokens", tokenEndpoint(t, key, clock, &mints))
	gh := appFetcher(f, &GitHubApp{AppID: "12345", Key: parsed, Now: clock.now})
	for range 2 {
		if _, err := gh.Fetch(context.Background(), ghRef); err != nil {
			t.Fatal(err)
		}
	}
	if lookups.Load() != 1 || mints.Load() != 1 {
		t.Fatalf("%d lookups, %d mints; want 1 and 1", lookups.Load(), mints.Load())
	}
	for _, r := range f.requests() {
		if strings.HasSuffix(r.URL.Path, "/installation") && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ey") {
			t.Errorf("installation lookup sent without the App's JWT")
		}
	}

	bad := "-----BEGIN RSA PRIVATE KEY-----\nnot-a-key-c2VjcmV0\n-----END RSA PRIVATE KEY-----\n"
	if _, err := ParseGitHubAppKey(bad); err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("ParseGitHubAppKey(garbage) = %v", err)
	}
}

func TestGitHubOwner(t *testing.T) {
	for path, want := range map[string][2]string{
		"/repos/Codertocat/Hello-World/pulls/2":          {"Codertocat", "Hello-World"},
		"/api/v3/repos/o/r%2Ex/pulls/2/reviews":          {"o", "r.x"},
		"/api/v3/orgs/acme/teams/justice-league/members": {"acme", ""},
		"/app/installations/1/access_tokens":             {"", ""},
	} {
		if o, r := githubOwner(path); o != want[0] || r != want[1] {
			t.Errorf("githubOwner(%q) = %q, %q; want %q", path, o, r, want)
		}
	}
}
