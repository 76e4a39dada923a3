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

// maxStatusPages bounds the lookup of a commit's statuses (100 a page;
// GitHub keeps at most 1000 per commit and context).
const maxStatusPages = 10

// GitHubStatus is the "github-status" channel: a commit status with
// context "criticizer" on the version's head commit, for a deployment
// with a token (a token cannot create check runs) (R-CHANNEL-10).
// Started sets it pending; Finished success (the counts in its
// description), or failure only with the opt-in (R-CHANNEL-11): a
// commit status has no neutral state. Statuses of one context replace
// each other, so a repeated send changes nothing; Find tells this
// version's by its target_url, the job's status link.
type GitHubStatus struct {
	API *source.GitHub
	Options
}

var _ channel.Channel = (*GitHubStatus)(nil)

// Name implements channel.Channel.
func (*GitHubStatus) Name() string { return GitHubStatusName }

type commitStatus struct {
	ID          int64  `json:"id"`
	State       string `json:"state"`
	Context     string `json:"context"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
}

// state is p's commit status state.
func (g *GitHubStatus) state(p channel.Post) string {
	switch {
	case p.Phase == channel.Started:
		return "pending"
	case g.failing(p):
		return "failure"
	}
	return "success"
}

// description is the status's description: the headline, at most 140
// bytes. It holds no model text.
func description(p channel.Post) string {
	return bound(headline(p), MaxDescriptionBytes)
}

// Find implements channel.Channel: the newest criticizer status of the
// head commit with this job's target_url, in this phase's state (for
// Started, in any: a Finished status must never go back to pending).
func (g *GitHubStatus) Find(ctx context.Context, p channel.Post) (channel.Receipt, bool, error) {
	if err := applicable(p, "github"); err != nil {
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
	return r, s.State == g.state(p), nil
}

// lookup is the newest status of context criticizer on p's head commit
// whose target is p's job (GitHub lists a commit's statuses newest
// first).
func (g *GitHubStatus) lookup(ctx context.Context, p channel.Post) (commitStatus, bool, error) {
	const op = "github.ListCommitStatuses"
	repo, err := githubRepo(p.Repository)
	if err != nil {
		return commitStatus{}, false, err
	}
	target := jobURL(p.JobURL)
	for page := 1; page <= maxStatusPages; page++ {
		var list []commitStatus
		path := repo + "/commits/" + url.PathEscape(p.Head) + "/statuses?per_page=100&page=" + strconv.Itoa(page)
		if err := g.API.Call(ctx, op, http.MethodGet, path, nil, &list); err != nil {
			return commitStatus{}, false, err
		}
		for _, s := range list {
			if s.Context == StatusContext && s.TargetURL == target {
				return s, true, nil
			}
		}
		if len(list) < 100 {
			break
		}
	}
	return commitStatus{}, false, nil
}

// Send implements channel.Channel. A Started post whose version already
// has a status posts nothing: it would set a finished one back to
// pending.
func (g *GitHubStatus) Send(ctx context.Context, p channel.Post, _ channel.Receipt) (channel.Receipt, error) {
	const op = "github.CreateCommitStatus"
	if err := applicable(p, "github"); err != nil {
		return channel.Receipt{}, err
	}
	repo, err := githubRepo(p.Repository)
	if err != nil {
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
	body := map[string]any{"state": g.state(p), "context": StatusContext, "description": description(p)}
	if u := jobURL(p.JobURL); u != "" {
		body["target_url"] = u
	}
	var s commitStatus
	if err := g.API.Call(ctx, op, http.MethodPost, repo+"/statuses/"+url.PathEscape(p.Head), body, &s); err != nil {
		return channel.Receipt{}, err
	}
	g.metric(ctx, GitHubStatusName, map[string]float64{"StatusesPosted": 1})
	return channel.Receipt{Ref: fmt.Sprint(s.ID)}, nil
}
