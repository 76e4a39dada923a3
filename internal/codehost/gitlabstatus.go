package codehost

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/source"
)

// GitLabStatus is the "gitlab-status" channel: a commit status named
// "criticizer" on the merge request version's head commit
// (R-CHANNEL-10): running while it is reviewed, then success (failed only
// with the opt-in, R-CHANNEL-11; never canceled or skipped, which a
// project whose pipelines must succeed would count against the change).
// GitLab answers 400 to a status posted in the state it already has (the
// resend after a lost answer): that is found, not failed.
type GitLabStatus struct {
	API *source.GitLab
	Options
}

var _ channel.Channel = (*GitLabStatus)(nil)

// Name implements channel.Channel.
func (*GitLabStatus) Name() string { return GitLabStatusName }

type gitlabStatus struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	Name        string `json:"name"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
}

func (g *GitLabStatus) state(p channel.Post) string {
	switch {
	case p.Phase == channel.Started:
		return "running"
	case g.failing(p):
		return "failed"
	}
	return "success"
}

// project is "/projects/:id" with the repository's path URL-encoded.
func gitlabProject(repo string) string { return "/projects/" + url.PathEscape(repo) }

// Find implements channel.Channel: the newest criticizer status of the
// head commit with this job's target_url; for Finished, in its final
// state.
func (g *GitLabStatus) Find(ctx context.Context, p channel.Post) (channel.Receipt, bool, error) {
	if err := applicable(p, "gitlab"); err != nil {
		return channel.Receipt{}, false, nil
	}
	s, ok, err := g.lookup(ctx, p)
	if err != nil || !ok {
		return channel.Receipt{}, false, err
	}
	r := channel.Receipt{Ref: strconv.FormatInt(s.ID, 10)}
	if p.Phase == channel.Started {
		return r, true, nil
	}
	return r, s.Status == g.state(p), nil
}

// lookup lists the head commit's statuses named criticizer (all of
// them, not only the latest per name) and keeps the newest (highest id)
// whose target is p's job.
func (g *GitLabStatus) lookup(ctx context.Context, p channel.Post) (gitlabStatus, bool, error) {
	const op = "gitlab.ListCommitStatuses"
	target := jobURL(p.JobURL)
	var best gitlabStatus
	found := false
	for page := 1; page <= maxStatusPages; page++ {
		var list []gitlabStatus
		path := gitlabProject(p.Repository) + "/repository/commits/" + url.PathEscape(p.Head) + "/statuses?name=" +
			url.QueryEscape(StatusContext) + "&all=true&per_page=100&page=" + strconv.Itoa(page)
		if err := g.API.Call(ctx, op, http.MethodGet, path, nil, &list); err != nil {
			return gitlabStatus{}, false, err
		}
		for _, s := range list {
			if s.Name == StatusContext && s.TargetURL == target && (!found || s.ID > best.ID) {
				best, found = s, true
			}
		}
		if len(list) < 100 {
			break
		}
	}
	return best, found, nil
}

// Send implements channel.Channel.
func (g *GitLabStatus) Send(ctx context.Context, p channel.Post, _ channel.Receipt) (channel.Receipt, error) {
	const op = "gitlab.CreateCommitStatus"
	if err := applicable(p, "gitlab"); err != nil {
		return channel.Receipt{}, err
	}
	switch {
	case p.StatusOff && p.Phase == channel.Started:
		return channel.Receipt{}, channel.ErrNotApplicable
	case p.StatusOff:
		// The repository turned its status off: one already posted is
		// still finished, never left pending.
		if _, ok, err := g.lookup(ctx, p); err != nil || !ok {
			return channel.Receipt{}, cmp.Or(err, channel.ErrNotApplicable)
		}
	case p.Phase == channel.Started:
		// Never set a finished status back to pending.
		if s, ok, err := g.lookup(ctx, p); err != nil || ok {
			return channel.Receipt{Ref: strconv.FormatInt(s.ID, 10)}, err
		}
	}
	body := map[string]any{"state": g.state(p), "name": StatusContext, "description": description(p)}
	if u := jobURL(p.JobURL); u != "" {
		body["target_url"] = u
	}
	var s gitlabStatus
	err := g.API.Call(ctx, op, http.MethodPost, gitlabProject(p.Repository)+"/statuses/"+url.PathEscape(p.Head), body, &s)
	if statusOf(err) == http.StatusBadRequest {
		// "Cannot transition status via :run from :running": the status
		// is in this state already — the resend after a lost answer.
		if r, ok, ferr := g.Find(ctx, p); ferr == nil && ok {
			return r, nil
		}
		return channel.Receipt{}, err
	}
	if err != nil {
		return channel.Receipt{}, err
	}
	g.metric(ctx, GitLabStatusName, map[string]float64{"StatusesPosted": 1})
	return channel.Receipt{Ref: fmt.Sprint(s.ID)}, nil
}
