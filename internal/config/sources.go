package config

import (
	"fmt"
	"os"
	"strings"
)

// GitHub configures the GitHub source.
type GitHub struct {
	WebhookSecret string // X-Hub-Signature-256 HMAC secret; unset: not routed
	Token         string // REST API token (pull requests: read)
	APIURL        string // REST API root
	// App, when configured, authenticates the REST API in place of Token.
	App GitHubApp
}

// Configured reports whether GitHub webhooks are accepted.
func (g GitHub) Configured() bool { return g.WebhookSecret != "" }

// GitLab configures the GitLab source.
type GitLab struct {
	WebhookToken  string // X-Gitlab-Token shared secret
	SigningSecret string // Standard Webhooks signing token, "whsec_<base64>"
	Token         string // REST API token (read_api)
	APIURL        string // REST API root (…/api/v4)
}

// Configured reports whether GitLab webhooks are accepted.
func (g GitLab) Configured() bool { return g.WebhookToken != "" || g.SigningSecret != "" }

// Gerrit configures the Gerrit source.
type Gerrit struct {
	WebhookToken string // shared secret: X-Criticizer-Token header or ?token=
	APIURL       string // server root, e.g. https://review.example.com
	Username     string // HTTP credentials of the REST API account
	Password     string
}

// Configured reports whether Gerrit webhooks are accepted.
func (g Gerrit) Configured() bool { return g.WebhookToken != "" }

// readSources reads the code review systems' settings (a source whose
// webhook credential is unset is not routed) and the reviewer directory.
func (c *Config) readSources(getenv func(string) string) error {
	c.GitHub = GitHub{WebhookSecret: getenv(EnvGitHubWebhookSecret), Token: getenv(EnvGitHubToken),
		APIURL: or(strings.TrimSpace(getenv(EnvGitHubAPIURL)), DefaultGitHubAPIURL), App: readGitHubApp(getenv)}
	c.GitLab = GitLab{WebhookToken: getenv(EnvGitLabWebhookToken), SigningSecret: getenv(EnvGitLabSigningSecret),
		Token: getenv(EnvGitLabToken), APIURL: or(strings.TrimSpace(getenv(EnvGitLabAPIURL)), DefaultGitLabAPIURL)}
	c.Gerrit = Gerrit{WebhookToken: getenv(EnvGerritWebhookToken), APIURL: strings.TrimSpace(getenv(EnvGerritAPIURL)),
		Username: getenv(EnvGerritUsername), Password: getenv(EnvGerritPassword)}
	if err := c.readCodeHost(getenv); err != nil {
		return err
	}
	var err error
	c.ReviewerDirectory, err = readDirectory(getenv(EnvReviewerDirectory))
	return err
}

// readDirectory returns the reviewer directory's JSON: v itself, or the
// content of the file v names as "@/path.json".
func readDirectory(v string) (string, error) {
	v = strings.TrimSpace(v)
	path, isFile := strings.CutPrefix(v, "@")
	if !isFile {
		return v, nil
	}
	if path == "" {
		return "", fmt.Errorf("%s: \"@\" must be followed by a file path", EnvReviewerDirectory)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvReviewerDirectory, err)
	}
	return string(b), nil
}
