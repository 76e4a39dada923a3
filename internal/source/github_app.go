package source

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/criticizer/criticizer/internal/retry"
)

// GitHub App timings (R-SOURCE-4). GitHub refuses an App JWT that expires
// more than 10 minutes after it was issued, or that is issued in the
// future by its clock: the JWT is dated 60 s back (clock drift) and lives
// 9 minutes. An installation token lives an hour; it is used until
// AppTokenRefreshMargin before it expires, so a token handed to a request
// never runs out during that request (a fetch is bounded by
// RequestTimeout, retries included well within the margin).
const (
	appJWTBackdate        = 60 * time.Second
	appJWTLifetime        = 9 * time.Minute
	AppTokenRefreshMargin = 5 * time.Minute
)

// GitHubApp authenticates to the GitHub REST API as a GitHub App's
// installation, as an organisation that installs the App (rather than
// handing out a person's token) expects: the App's private key signs a
// short JWT, which is exchanged for an installation access token
// (POST /app/installations/{id}/access_tokens). Tokens are kept per
// installation and reused until AppTokenRefreshMargin before they expire,
// then minted again; concurrent requests for one installation share one
// mint. It is safe for concurrent use.
//
// The installation is InstallationID when set (the common case: one
// installation, in the organisation that owns the repositories);
// otherwise it is looked up once per owner (GET /repos/{owner}/{repo}/installation,
// or /orgs/{org}/installation for an organisation's own endpoints) and
// remembered, so one deployment serves repositories of several
// organisations that each installed the App.
//
// Why not a library for the whole exchange: the one in wide use
// (github.com/bradleyfalzon/ghinstallation/v2) brings in go-github and an
// older jwt major, keeps one token per transport (one installation), and
// reads the wall clock, so "refreshed 5 minutes before expiry" can be
// neither configured nor tested. The JWT, the part worth a library, is
// github.com/golang-jwt/jwt/v5; the exchange is one POST.
type GitHubApp struct {
	// AppID is the App's id (or client id), the JWT's issuer.
	AppID string
	// InstallationID, when non-zero, is the installation every request
	// uses; zero looks it up per repository owner.
	InstallationID int64
	// Key is the App's private key (ParseGitHubAppKey).
	Key *rsa.PrivateKey
	// BaseURL is the API root, as GitHub.BaseURL.
	BaseURL string
	// Client makes the App's own requests (never through
	// GitHubAppTransport); nil: one with a 30 s timeout.
	Client *http.Client
	// Now is the clock for the JWT and the tokens' expiry; nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	owners   map[string]int64 // lower-cased owner → installation id
	installs map[int64]*installationToken
}

// installationToken is one installation's cached token. Its mutex is held
// while it is minted, so concurrent requests wait for one mint.
type installationToken struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

// ParseGitHubAppKey reads an App private key as GitHub issues it (PEM,
// PKCS #1 "RSA PRIVATE KEY", or PKCS #8). The error never quotes the key.
func ParseGitHubAppKey(pem string) (*rsa.PrivateKey, error) {
	k, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(strings.TrimSpace(pem)))
	if err != nil {
		return nil, errors.New("not a PEM-encoded RSA private key")
	}
	return k, nil
}

func (a *GitHubApp) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *GitHubApp) base() string {
	if a.BaseURL == "" {
		return "https://api.github.com"
	}
	return strings.TrimRight(a.BaseURL, "/")
}

// Token returns an installation token for a request about owner's
// repository repo (repo may be empty for an organisation's endpoints):
// the cached one while it has more than AppTokenRefreshMargin left, else a
// new one.
func (a *GitHubApp) Token(ctx context.Context, owner, repo string) (string, error) {
	id, err := a.installation(ctx, owner, repo)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	if a.installs == nil {
		a.installs = map[int64]*installationToken{}
	}
	it := a.installs[id]
	if it == nil {
		it = &installationToken{}
		a.installs[id] = it
	}
	a.mu.Unlock()

	it.mu.Lock()
	defer it.mu.Unlock()
	if it.token != "" && a.now().Before(it.expires.Add(-AppTokenRefreshMargin)) {
		return it.token, nil
	}
	tok, exp, err := a.mint(ctx, id)
	if err != nil {
		return "", err
	}
	it.token, it.expires = tok, exp
	return tok, nil
}

// Forget drops a cached token GitHub refused (revoked, or the App was
// reinstalled), so the next request mints a new one rather than failing
// until it expires.
func (a *GitHubApp) Forget(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, it := range a.installs {
		// Token never takes a.mu while it holds it.mu: no deadlock.
		it.mu.Lock()
		if it.token == token {
			it.token, it.expires = "", time.Time{}
		}
		it.mu.Unlock()
	}
}

// appJWT signs the App's JWT (RS256).
func (a *GitHubApp) appJWT() (string, error) {
	if a.Key == nil || a.AppID == "" {
		return "", retry.Permanent(retry.AuthDenied, errors.New("github app: no app id or private key configured"))
	}
	now := a.now()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    a.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-appJWTBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(appJWTLifetime)),
	})
	s, err := t.SignedString(a.Key)
	if err != nil {
		return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("github app: signing the JWT: %w", err))
	}
	return s, nil
}

// appRequest makes one of the App's own requests, authenticated by its
// JWT.
func (a *GitHubApp) appRequest(ctx context.Context, op, method, u string) (*http.Response, error) {
	j, err := a.appJWT()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: building request: %w", op, err))
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("User-Agent", "criticizer")
	req.Header.Set("X-GitHub-Api-Version", GitHubAPIVersion)
	req.Header.Set("Authorization", "Bearer "+j)
	c := a.Client
	if c == nil {
		c = defaultClient
	}
	return do(c, req, op, a.now)
}

// mint exchanges the App's JWT for an installation token.
func (a *GitHubApp) mint(ctx context.Context, id int64) (string, time.Time, error) {
	const op = "github.CreateInstallationAccessToken"
	resp, err := a.appRequest(ctx, op, http.MethodPost, a.base()+"/app/installations/"+strconv.FormatInt(id, 10)+"/access_tokens")
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", time.Time{}, malformed(op, err)
	}
	if body.Token == "" || body.ExpiresAt.IsZero() {
		return "", time.Time{}, malformed(op, errors.New("no token or expires_at"))
	}
	return body.Token, body.ExpiresAt, nil
}

// installation is the installation a request about owner/repo uses.
func (a *GitHubApp) installation(ctx context.Context, owner, repo string) (int64, error) {
	if a.InstallationID != 0 {
		return a.InstallationID, nil
	}
	if owner == "" {
		return 0, retry.Permanent(retry.RuntimeBug, errors.New("github app: a request names no repository owner, and no installation id is configured"))
	}
	k := strings.ToLower(owner)
	a.mu.Lock()
	id, ok := a.owners[k]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	const op = "github.GetInstallation"
	u := a.base() + "/orgs/" + url.PathEscape(owner) + "/installation"
	if repo != "" {
		u = a.base() + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/installation"
	}
	resp, err := a.appRequest(ctx, op, http.MethodGet, u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		ID int64 `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || body.ID <= 0 {
		return 0, malformed(op, fmt.Errorf("no installation id: %v", err))
	}
	a.mu.Lock()
	if a.owners == nil {
		a.owners = map[string]int64{}
	}
	a.owners[k] = body.ID
	a.mu.Unlock()
	return body.ID, nil
}

// GitHubAppTransport authenticates every request to the GitHub REST API
// with an installation token of App: the repository's owner (and
// repository) is read from the request's path (…/repos/{owner}/{repo}/…,
// …/orgs/{org}/…), so a GitHub fetcher, and any other code that calls the
// API with this transport's client, needs no token of its own. A 401
// answer drops the token it was sent with (App.Forget), so the retry
// mints another.
type GitHubAppTransport struct {
	App *GitHubApp
	// Base sends the requests; nil: http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *GitHubAppTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	owner, repo := githubOwner(req.URL.EscapedPath())
	tok, err := t.App.Token(req.Context(), owner, repo)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.App.Forget(tok)
	}
	return resp, err
}

// githubOwner reads the owner and repository (or the organisation, repo
// empty) an API path is about; empty when it names neither.
func githubOwner(escapedPath string) (owner, repo string) {
	parts := strings.Split(escapedPath, "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "repos":
			if i+2 < len(parts) {
				o, _ := url.PathUnescape(parts[i+1])
				r, _ := url.PathUnescape(parts[i+2])
				return o, r
			}
		case "orgs":
			o, _ := url.PathUnescape(parts[i+1])
			return o, ""
		}
	}
	return "", ""
}
