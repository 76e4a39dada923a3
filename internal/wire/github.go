package wire

import (
	"fmt"
	"net/http"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/source"
)

// GitHubAPI builds the GitHub REST client every function that calls
// GitHub uses: with the static token, or, when a GitHub App is
// configured, with an HTTP client whose every request carries an
// installation token of the App (source.GitHubAppTransport, R-SOURCE-4);
// app says which. The App's own requests (installation lookup, token
// mint) go through a plain client with the same timeout. An App key that
// does not parse is an error naming its variable (config.Validate
// refuses one first).
func GitHubAPI(cfg config.Config, maxDiff int, now func() time.Time) (gh *source.GitHub, app bool, err error) {
	gh = &source.GitHub{BaseURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, MaxDiffBytes: maxDiff, Now: now}
	a := cfg.GitHub.App
	if !a.Configured() {
		return gh, false, nil
	}
	key, err := source.ParseGitHubAppKey(a.PrivateKey)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", config.EnvGitHubAppPrivateKey, err)
	}
	ga := &source.GitHubApp{AppID: a.ID, InstallationID: a.Installation(), Key: key, BaseURL: cfg.GitHub.APIURL,
		Client: &http.Client{Timeout: source.RequestTimeout}, Now: now}
	gh.Token = ""
	gh.Client = &http.Client{Timeout: source.RequestTimeout, Transport: &source.GitHubAppTransport{App: ga}}
	return gh, true, nil
}
