package chaos

import (
	"context"
	"net/http"
	"strings"

	"github.com/criticizer/criticizer/internal/codehost"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
)

// The status on the change (R-CHANNEL-10, R-CHANNEL-14): the campaign
// runs with CRITICIZER_CODE_HOST_STATUS on, so every pull request head
// the GitHub stand-in holds gets a commit status (the campaign's GitHub
// is a token's) and the stacked Gerrit change a review message, while the
// stand-ins drop some of those answers after the work (loseCodeHost).
// When the stack has drained, every host version whose job ended must
// show a finished status on its head — never one left pending (a lost
// status) — and no status or message is posted twice.

// loseCodeHost drops the answers of status and message posts after the
// host applied them: a pending status (found by the send's own look
// before it posts another) and, for each pull request, a finished one
// (found only by the protocol's Find), and the Gerrit review message.
func loseCodeHost(gh *devstack.GitHubStandIn, g *devstack.GerritStandIn, pulls int) {
	gh.Loss.LoseWith(http.MethodPost, "/statuses/", `"state":"pending"`, 1)
	gh.Loss.LoseWith(http.MethodPost, "/statuses/", `"state":"success"`, pulls)
	g.Loss.Lose(http.MethodPost, "/review", 1)
}

// verifyCodeHost counts the statuses on the heads of the host jobs that
// ended, those lost (no status, or the newest still pending), those
// posted twice (a head with two finished statuses, a Gerrit post's id in
// two messages), and the answers the stand-ins dropped.
func verifyCodeHost(ctx context.Context, get func(context.Context, job.ID) (job.Job, error), gh *devstack.GitHubStandIn,
	pulls []*hostPull, gst *gerritStack, rep *Report) {
	rep.CodeHostLostAnswers = gh.Loss.Lost() + gst.g.Loss.Lost()
	for _, p := range pulls {
		for _, h := range p.Heads {
			if h.jobID == "" {
				continue
			}
			if j, err := get(ctx, h.jobID); err != nil || !j.Status.Terminal() {
				continue
			}
			var mine []devstack.GitHubStatus
			for _, s := range gh.Checks.Statuses(h.SHA) {
				if s.Context == codehost.StatusContext {
					mine = append(mine, s)
				}
			}
			finished := 0
			for _, s := range mine {
				if s.State != "pending" {
					finished++
				}
			}
			switch {
			case len(mine) == 0 || mine[len(mine)-1].State == "pending":
				rep.CodeHostLost++
			default:
				rep.CodeHostStatuses++
			}
			if finished > 1 {
				rep.CodeHostDuplicates += finished - 1
			}
		}
	}
	if gst.jobID == "" {
		return
	}
	if j, err := get(ctx, gst.jobID); err != nil || !j.Status.Terminal() {
		return
	}
	posts := map[string]int{}
	for _, m := range gst.g.Messages(2) {
		if m.Tag != codehost.GerritTag {
			continue
		}
		_, id, _ := strings.Cut(m.Message, "\n"+codehost.GerritPostMarker)
		posts[id]++
	}
	switch {
	case len(posts) == 0:
		rep.CodeHostLost++
	default:
		rep.CodeHostStatuses += len(posts)
	}
	for _, n := range posts {
		rep.CodeHostDuplicates += n - 1
	}
}
