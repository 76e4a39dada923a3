package fetch

import (
	"fmt"
	"net/http"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/source"
)

// GitHub builds the GitHub fetcher: with the static token, or, when a
// GitHub App is configured, with an HTTP client whose every request
// carries an installation token of the App (source.GitHubAppTransport,
// R-SOURCE-4). The App's own requests (installation lookup, token mint)
// go through a plain client with the same timeout.
func GitHub(cfg config.Config, now func() time.Time) source.Fetcher {
	gh := &source.GitHub{BaseURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, MaxDiffBytes: pipeline.MaxDiffBytes, Now: now}
	app := cfg.GitHub.App
	if !app.Configured() {
		return gh
	}
	key, err := source.ParseGitHubAppKey(app.PrivateKey)
	if err != nil {
		// config.Validate refuses such a key; this is a last guard.
		return unconfigured{fmt.Sprintf("%s: %v", config.EnvGitHubAppPrivateKey, err)}
	}
	a := &source.GitHubApp{AppID: app.ID, InstallationID: app.Installation(), Key: key, BaseURL: cfg.GitHub.APIURL,
		Client: &http.Client{Timeout: source.RequestTimeout}, Now: now}
	gh.Token = ""
	gh.Client = &http.Client{Timeout: source.RequestTimeout, Transport: &source.GitHubAppTransport{App: a}}
	return gh
}
