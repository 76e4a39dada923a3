package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// LearningsAdmin is what the admin API does with the team's learnings
// (store.Learnings).
type LearningsAdmin interface {
	List(ctx context.Context) ([]vote.Learning, error)
	vote.LearningDecider
}

// LearningList is the body of GET /admin/learnings: the learnings with
// the threshold they were classified under.
type LearningList struct {
	LearnAfter int             `json:"learn_after"`
	Learnings  []vote.Learning `json:"learnings"`
}

// learnings serves /admin/learnings (R-LEARN-2):
//
//	GET  /admin/learnings[?all=true]          proposed and decided learnings (all: those counting too)
//	POST /admin/learnings/{id}/accept         leave the rule out of the repository's reviews
//	POST /admin/learnings/{id}/reject         keep it; never proposed again
//
// The same operations as `criticizer learnings`.
func (a *Admin) learnings(ctx context.Context, req events.APIGatewayV2HTTPRequest, method, path string) events.APIGatewayV2HTTPResponse {
	if a.Learnings == nil {
		return noRoute(method, path)
	}
	if path == "/admin/learnings" {
		if method != http.MethodGet {
			return methodNotAllowed(http.MethodGet)
		}
		all := false
		switch v := req.QueryStringParameters["all"]; v {
		case "", "false":
		case "true":
			all = true
		default:
			return problem(http.StatusBadRequest, "all", "all is true or false")
		}
		ls, err := a.Learnings.List(ctx)
		if err != nil {
			a.Log.ErrorContext(ctx, "list the learnings failed", "error", err)
			return unavailable("could not read the learnings; retry")
		}
		out := LearningList{LearnAfter: a.learnAfter(), Learnings: []vote.Learning{}}
		for _, l := range ls {
			if l = l.Classify(out.LearnAfter); all || l.State != vote.Counting {
				out.Learnings = append(out.Learnings, l)
			}
		}
		return jsonResponse(http.StatusOK, out, map[string]string{"Cache-Control": "no-store"})
	}
	id, verb, ok := strings.Cut(strings.TrimPrefix(path, "/admin/learnings/"), "/")
	if !ok || id == "" || strings.Contains(verb, "/") || (verb != "accept" && verb != "reject") {
		return problem(http.StatusNotFound, "path", "use /admin/learnings/{id}/accept or /admin/learnings/{id}/reject")
	}
	if method != http.MethodPost {
		return methodNotAllowed(http.MethodPost)
	}
	if _, ok := vote.SplitLearningID(id); !ok {
		return problem(http.StatusBadRequest, "id", "not a learning's id: see GET /admin/learnings")
	}
	st := vote.Accepted
	if verb == "reject" {
		st = vote.Rejected
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	l, err := vote.Decide(ctx, a.Learnings, a.learnAfter(), id, st, now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return problem(http.StatusNotFound, "id", "no such learning")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "id", "the learning was decided already")
	case errors.Is(err, vote.ErrNotProposed):
		return problem(http.StatusConflict, "id", vote.ErrNotProposed.Error())
	case err != nil:
		a.Log.ErrorContext(ctx, "decide a learning failed", "id", id, "error", err)
		return unavailable("could not decide the learning; retry")
	}
	a.Log.InfoContext(ctx, "learning decided", "id", l.ID, "state", l.State, "rule", l.Rule)
	return jsonResponse(http.StatusOK, l, nil)
}

// learnAfter is the threshold learnings are proposed at.
func (a *Admin) learnAfter() int { return max(a.LearnAfter, 1) }
