package codehost_test

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/source"
)

// counter counts the requests a client sends, by "METHOD path-part":
// an observer on the real exchange with a stand-in, not a fake.
type counter struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// count is how many requests had method and a path containing part.
func (c *counter) count(method, part string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.seen {
		if strings.HasPrefix(s, method+" ") && strings.Contains(s, part) {
			n++
		}
	}
	return n
}

var (
	keyOnce sync.Once
	appKey  *rsa.PrivateKey
)

// appGitHub is a GitHub client authenticated as a GitHub App's
// installation (source.GitHubAppTransport) against the stand-in, whose
// requests c counts.
func appGitHub(t *testing.T, gh *devstack.GitHubStandIn) (*source.GitHub, *counter) {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		appKey = k
	})
	app := &source.GitHubApp{AppID: "1", Key: appKey, BaseURL: gh.URL(), Client: &http.Client{Timeout: source.RequestTimeout}}
	c := &counter{next: &source.GitHubAppTransport{App: app}}
	return &source.GitHub{BaseURL: gh.URL(), Client: &http.Client{Timeout: source.RequestTimeout, Transport: c}}, c
}

// tokenGitHub is a GitHub client with a static token.
func tokenGitHub(gh *devstack.GitHubStandIn) (*source.GitHub, *counter) {
	c := &counter{next: http.DefaultTransport}
	return &source.GitHub{BaseURL: gh.URL(), Token: "ghp_token", Client: &http.Client{Timeout: source.RequestTimeout, Transport: c}}, c
}

// findings are n findings on lines 1..n of a.go, the severities in
// turn.
func findings(n int) ([]critic.Finding, channel.Counts) {
	sev := []critic.Severity{critic.SeverityError, critic.SeverityWarning, critic.SeverityInfo}
	var out []critic.Finding
	var c channel.Counts
	for i := range n {
		s := sev[i%3]
		out = append(out, critic.Finding{File: "a.go", Line: i + 1, Severity: s, Rule: "rule-" + fmt.Sprint(i), Message: fmt.Sprintf("finding %d", i)})
		switch s {
		case critic.SeverityError:
			c.Error++
		case critic.SeverityWarning:
			c.Warning++
		default:
			c.Info++
		}
	}
	return out, c
}

// post is version v of pull request 7 of repo at head, in phase ph.
func post(source, repo, head string, v int, ph channel.Phase) channel.Post {
	key := fmt.Sprintf("%s:%s#7@%d", source, repo, v)
	sep := map[string]string{"github": "#", "gitlab": "!", "gerrit": "~"}[source]
	return channel.Post{ID: key + "/" + string(ph), VersionKey: key, Source: source, Repository: repo, Changelist: repo + sep + "7",
		Version: v, Head: head, Title: "a change", Phase: ph, JobURL: fmt.Sprintf("https://criticizer.example.com/jobs/%d", v)}
}

// finished is p reviewed with fs.
func finished(p channel.Post, fs []critic.Finding, c channel.Counts) channel.Post {
	p.Phase, p.Outcome, p.Findings, p.Counts = channel.Finished, channel.Reviewed, fs, c
	p.ID = p.VersionKey + "/finished"
	return p
}
