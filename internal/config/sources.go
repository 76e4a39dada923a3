package config

import (
	"fmt"
	"os"
	"strings"
)

// GitHubConfig configures the GitHub source.
type GitHubConfig struct {
	WebhookSecret string // X-Hub-Signature-256 HMAC secret; unset: not routed
	Token         string // REST API token (pull requests: read)
	APIURL        string // REST API root
	// App, when configured, authenticates the REST API in place of Token.
	App GitHubAppConfig
}

// Configured reports whether GitHub webhooks are accepted.
func (g GitHubConfig) Configured() bool { return g.WebhookSecret != "" }

// GitLabConfig configures the GitLab source.
type GitLabConfig struct {
	WebhookToken  string // X-Gitlab-Token shared secret
	SigningSecret string // Standard Webhooks signing token, "whsec_<base64>"
	Token         string // REST API token (read_api)
	APIURL        string // REST API root (…/api/v4)
}

// Configured reports whether GitLab webhooks are accepted.
func (g GitLabConfig) Configured() bool { return g.WebhookToken != "" || g.SigningSecret != "" }

// GerritConfig configures the Gerrit source.
type GerritConfig struct {
	WebhookToken string // shared secret: X-Criticizer-Token header or ?token=
	APIURL       string // server root, e.g. https://review.example.com
	Username     string // HTTP credentials of the REST API account
	Password     string
}

// Configured reports whether Gerrit webhooks are accepted.
func (g GerritConfig) Configured() bool { return g.WebhookToken != "" }

// readSources reads the code review systems' settings (a source whose
// webhook credential is unset is not routed) and the reviewer directory.
func (c *Config) readSources(getenv func(string) string) error {
	c.GitHub = GitHubConfig{WebhookSecret: getenv(EnvGitHubWebhookSecret), Token: getenv(EnvGitHubToken),
		APIURL: or(strings.TrimSpace(getenv(EnvGitHubAPIURL)), DefaultGitHubAPIURL), App: readGitHubApp(getenv)}
	c.GitLab = GitLabConfig{WebhookToken: getenv(EnvGitLabWebhookToken), SigningSecret: getenv(EnvGitLabSigningSecret),
		Token: getenv(EnvGitLabToken), APIURL: or(strings.TrimSpace(getenv(EnvGitLabAPIURL)), DefaultGitLabAPIURL)}
	c.Gerrit = GerritConfig{WebhookToken: getenv(EnvGerritWebhookToken), APIURL: strings.TrimSpace(getenv(EnvGerritAPIURL)),
		Username: getenv(EnvGerritUsername), Password: getenv(EnvGerritPassword)}
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
