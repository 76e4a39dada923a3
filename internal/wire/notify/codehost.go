package notify

import (
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/codehost"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/wire"
)

// CodeHost builds the channels that post a version's status on the
// change itself, when CRITICIZER_CODE_HOST_STATUS is on (R-CHANNEL-10),
// one per code host, with the clients and credentials the fetch stage
// reads that host with: GitHub with an App, a check run (github-check);
// with a token, a commit status (github-status; a token cannot create
// check runs); GitLab, a commit status (gitlab-status); Gerrit, once its
// server is set, a review message (gerrit-message). A generic caller has
// no change to post on. GitHub without credentials (public repositories
// only) cannot write: no channel.
func CodeHost(cfg config.Config, now func() time.Time, log *slog.Logger) ([]channel.Channel, error) {
	ch := cfg.Notify.CodeHost
	if !ch.Status {
		return nil, nil
	}
	o := codehost.Options{FailOnError: ch.FailOnError, GerritLabel: ch.GerritLabel, Now: now, Log: log}
	var out []channel.Channel
	gh, app, err := wire.GitHubAPI(cfg, 0, now)
	if err != nil {
		return nil, err
	}
	switch {
	case app:
		out = append(out, &codehost.GitHubCheck{API: gh, Options: o})
	case cfg.GitHub.Token != "":
		out = append(out, &codehost.GitHubStatus{API: gh, Options: o})
	}
	if cfg.GitLab.Token != "" {
		out = append(out, &codehost.GitLabStatus{API: &source.GitLab{BaseURL: cfg.GitLab.APIURL, Token: cfg.GitLab.Token, Now: now}, Options: o})
	}
	if cfg.Gerrit.APIURL != "" {
		out = append(out, &codehost.GerritMessage{API: &source.Gerrit{BaseURL: cfg.Gerrit.APIURL, Username: cfg.Gerrit.Username,
			Password: cfg.Gerrit.Password, Now: now}, Options: o})
	}
	return out, nil
}
