package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/voting"
)

// Votes serves /vote/{token}: the "useful" and "wrong" links under every
// finding of an email (R-VOTE-1).
//
//   - GET (and HEAD) answers a page with one button. It records nothing:
//     mail scanners (Safe Links, prefetchers, link checkers) fetch every
//     link of a message, both links of every finding, and a GET that
//     recorded would turn each scan into a vote for both choices. The
//     reader's "single click" is the link and then the button.
//   - POST records the token's choice for its finding of its email and
//     answers a page saying so. Votes are keyed by (delivery, finding), so
//     a POST repeated, or from another device, records once; the other
//     link of the pair replaces the choice.
//
// A link that does not verify is refused (403), one past its expiry too
// (410); neither records anything. Unlike an unsubscribe link, a vote link
// names no recipient, so saying "not valid" tells a caller nothing.
//
// A "wrong" also keeps the finding out of the reader's later emails about
// the changelist while its line is unchanged, and a "useful" brings it
// back (R-VOTE-3): with Marks, Rows and Jobs set, the vote is recorded by
// voting.Recorder, which looks the finding up in the email's critique.
type Votes struct {
	Signer *vote.Signer // nil: vote links are off (404)
	Store  store.Votes
	// Marks keeps readers' marks; Rows and Jobs find the email's
	// recipient, changelist and finding. Any nil: votes only.
	Marks store.Dismissals
	Rows  voting.Rows
	Jobs  voting.Jobs
	// Learnings tallies the choices per rule and repository (R-LEARN-1);
	// nil: none.
	Learnings store.Learnings
	// Directory tells a code host's author by their address (R-LEARN-1).
	Directory voting.Directory
	Pages     VotePages
	Log       *slog.Logger
	Now       func() time.Time
}

// VotePages renders the endpoint's pages (internal/mail).
type VotePages interface {
	VotePage(action, choice string) ([]byte, error)
	VotedPage(choice string) ([]byte, error)
	VoteRefusedPage(expired bool) ([]byte, error)
}

func (v *Votes) handle(ctx context.Context, method, token string) events.APIGatewayV2HTTPResponse {
	if v == nil || v.Signer == nil || v.Store == nil {
		return problem(http.StatusNotFound, "path", "vote links are not configured")
	}
	if method != http.MethodGet && method != http.MethodHead && method != http.MethodPost {
		return methodNotAllowed("GET, POST")
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	c, err := v.Signer.Verify(token, now())
	if err != nil {
		expired := errors.Is(err, vote.ErrExpired)
		if method == http.MethodPost {
			outcome := "invalid_token"
			if expired {
				outcome = "expired"
			}
			obs.Metric(ctx, v.Log, map[string]string{"Outcome": outcome}, map[string]float64{"Votes": 1})
			v.Log.WarnContext(ctx, "vote refused", "outcome", outcome)
		}
		status := http.StatusForbidden
		if expired {
			status = http.StatusGone
		}
		return v.page(status)(v.Pages.VoteRefusedPage(expired))
	}
	if method != http.MethodPost {
		return v.page(http.StatusOK)(v.Pages.VotePage("/vote/"+url.PathEscape(token), string(c.Choice)))
	}
	rec := voting.Recorder{Votes: v.Store, Marks: v.Marks, Rows: v.Rows, Jobs: v.Jobs, Learnings: v.Learnings, Directory: v.Directory}
	res, err := rec.Record(ctx, c.DeliveryID, voting.Ref{ID: c.FindingID, Rule: c.Rule}, c.Choice, now())
	if err != nil {
		v.Log.ErrorContext(ctx, "vote not recorded", "error", err)
		return problem(http.StatusServiceUnavailable, "", "could not record the vote; try again")
	}
	// Votes counts every POST by outcome and choice: recorded and changed
	// are the readers' opinions, repeat the clicks that changed nothing.
	obs.Metric(ctx, v.Log, map[string]string{"Outcome": string(res.Vote), "Choice": string(c.Choice)}, map[string]float64{"Votes": 1})
	if res.Mark != "" {
		// Dismissals counts what votes did to readers' marks (R-VOTE-3):
		// "full" is a wrong not kept for the bound.
		obs.Metric(ctx, v.Log, map[string]string{"Outcome": string(res.Mark)}, map[string]float64{"Dismissals": 1})
	}
	if res.Learning != "" {
		// LearningVotes counts what the tally did (R-LEARN-1): "full" is
		// a choice past its bound, "author" one the author made.
		obs.Metric(ctx, v.Log, map[string]string{"Outcome": string(res.Learning)}, map[string]float64{"LearningVotes": 1})
	}
	v.Log.InfoContext(ctx, "vote", "outcome", res.Vote, "choice", c.Choice, "mark", res.Mark, "delivery_id", c.DeliveryID, "finding_id", c.FindingID, "rule", c.Rule)
	return v.page(http.StatusOK)(v.Pages.VotedPage(string(c.Choice)))
}

func (v *Votes) page(status int) func([]byte, error) events.APIGatewayV2HTTPResponse {
	return func(body []byte, err error) events.APIGatewayV2HTTPResponse {
		if err != nil {
			v.Log.Error("vote page not rendered", "error", err)
			return problem(http.StatusInternalServerError, "", "could not render the page")
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(body), Headers: map[string]string{
			"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
			"X-Robots-Tag": "noindex", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
		}}
	}
}

// voteToken takes the token from /vote/{token}.
func voteToken(path string) (string, bool) {
	t, ok := strings.CutPrefix(path, "/vote/")
	return t, ok && t != "" && !strings.Contains(t, "/")
}
