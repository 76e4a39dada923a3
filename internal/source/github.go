package source

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// GitHubAPIVersion is the REST API version requested.
const GitHubAPIVersion = "2022-11-28"

// GitHub fetches pull requests from the GitHub REST API:
//
//   - the diff of the commit the event named (R-SOURCE-5): GET
//     /repos/{owner}/{repo}/compare/{base}...{head} with Accept:
//     application/vnd.github.diff, base and head the event's
//     pull_request.base.sha and head.sha — never the pull request's
//     diff, which is of its head now, whatever the event said. The three
//     dots diff the head against its merge base with the base, as the
//     pull request's diff does. When GitHub refuses to render a diff that
//     large (406), the per-file patches of the same comparison as JSON
//     (its files, up to 300, all on the first page) are assembled
//     instead, and files GitHub serves without a patch make the result
//     Truncated. A reference without a base (recorded before events
//     carried one) takes the pull request's base: GET
//     /repos/{owner}/{repo}/pulls/{number};
//   - the reviewers asked now: GET /repos/{owner}/{repo}/pulls/{number}/requested_reviewers,
//     users, and requested teams expanded to their members with
//     GET /orgs/{owner}/teams/{slug}/members (a team the token cannot read
//     is reported in Reviewers.UnexpandedTeams, never guessed at);
//   - who reviewed: GET /repos/{owner}/{repo}/pulls/{number}/reviews, each
//     user with the time of their latest submitted review. GitHub forgets
//     a requested reviewer once they submit a review, so the reviews are
//     how a reviewer who already reviewed still gets later versions.
//
// Logins come without e-mail addresses (GitHub does not disclose them; see
// reviewers.Directory).
type GitHub struct {
	// BaseURL is the API root: "https://api.github.com" when empty, or
	// "https://HOST/api/v3" for GitHub Enterprise Server.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" (a fine-grained
	// token or installation token with pull requests: read). Empty sends
	// no credentials, which only works for public repositories, unless
	// Client's transport adds them (a GitHubAppTransport: a GitHub App's
	// installation tokens, R-SOURCE-4).
	Token string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client
	// MaxDiffBytes caps the diff; zero means DefaultMaxDiffBytes.
	MaxDiffBytes int
	// Now is the clock for rate-limit resets; nil means time.Now.
	Now func() time.Time
}

var _ Fetcher = (*GitHub)(nil)

func (g *GitHub) api() api {
	return newAPI(g.Client, g.Now, func(r *http.Request) {
		r.Header.Set("X-GitHub-Api-Version", GitHubAPIVersion)
		if g.Token != "" {
			r.Header.Set("Authorization", "Bearer "+g.Token)
		}
	})
}

func (g *GitHub) base() string {
	if g.BaseURL == "" {
		return "https://api.github.com"
	}
	return strings.TrimRight(g.BaseURL, "/")
}

// repoURL is the repository's API URL.
func (g *GitHub) repoURL(ref Ref) (string, string, error) {
	if err := checkRef("github", ref); err != nil {
		return "", "", err
	}
	owner, repo, ok := strings.Cut(ref.Repo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", retry.Permanent(retry.SchemaInvalid, fmt.Errorf("source: github repository must be owner/repo"))
	}
	return g.base() + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo), owner, nil
}

// pull is the pull request's API URL.
func (g *GitHub) pull(ref Ref) (string, string, error) {
	r, owner, err := g.repoURL(ref)
	if err != nil {
		return "", "", err
	}
	return r + "/pulls/" + strconv.Itoa(ref.Number), owner, nil
}

// Fetch implements Fetcher.
func (g *GitHub) Fetch(ctx context.Context, ref Ref) (Changelist, error) {
	pull, owner, err := g.pull(ref)
	if err != nil {
		return Changelist{}, err
	}
	repo, _, _ := g.repoURL(ref)
	a := g.api()
	base, head := ref.BaseSHA, ref.HeadSHA
	if base == "" || head == "" {
		if base, head, err = g.pullCommits(ctx, a, pull, base, head); err != nil {
			return Changelist{}, err
		}
	}
	cl := Changelist{BaseSHA: base}
	cl.Diff, cl.Truncated, err = g.diff(ctx, a, repo+"/compare/"+url.PathEscape(base)+"..."+url.PathEscape(head))
	if err != nil {
		return Changelist{}, err
	}
	if cl.Reviewers, err = g.reviewers(ctx, a, pull, owner); err != nil {
		return Changelist{}, err
	}
	return cl, nil
}

var _ Orderer = (*GitHub)(nil)

// Standing implements Orderer with the compare API's status (R-SOURCE-6):
// GET /repos/{owner}/{repo}/compare/{other}...{head} as JSON, its
// `status` — "ahead" when head descends from other, "behind" when it is
// an ancestor of other, "identical", "diverged" when neither (a
// force-push left other off the branch). Only the answer's first members
// are read, up to `status`: the comparison lists commits and files after
// it (per_page=1 keeps the commits to one). A comparison GitHub cannot
// make (404, 422: other is not in the repository any more, or shares no
// history with head) is Diverged: other cannot be ahead of a head GitHub
// does not relate it to.
func (g *GitHub) Standing(ctx context.Context, ref Ref, other string) (Standing, error) {
	const op = "github.CompareCommitsStatus"
	repo, _, err := g.repoURL(ref)
	if err != nil {
		return 0, err
	}
	if ref.HeadSHA == "" || other == "" {
		return 0, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("%s: two commits are needed", op))
	}
	resp, err := g.api().get(ctx, op, repo+"/compare/"+url.PathEscape(other)+"..."+url.PathEscape(ref.HeadSHA)+"?per_page=1",
		"application/vnd.github+json")
	if re, ok := errors.AsType[*retry.Error](err); ok && (re.Status == http.StatusNotFound || re.Status == http.StatusUnprocessableEntity) {
		return Diverged, nil
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	status, err := memberString(io.LimitReader(resp.Body, 4<<20), "status")
	if err != nil {
		return 0, malformed(op, err)
	}
	switch status {
	case "ahead":
		return Ahead, nil
	case "behind":
		return Behind, nil
	case "identical":
		return Identical, nil
	case "diverged":
		return Diverged, nil
	}
	return 0, malformed(op, fmt.Errorf("unknown comparison status %q", status))
}

// Reviewers implements Fetcher.
func (g *GitHub) Reviewers(ctx context.Context, ref Ref) (Reviewers, error) {
	pull, owner, err := g.pull(ref)
	if err != nil {
		return Reviewers{}, err
	}
	return g.reviewers(ctx, g.api(), pull, owner)
}

// pullCommits fills what a reference lacks of the base and head
// commits from the pull request: a reference recorded before events
// carried their base. The head the event named is kept.
func (g *GitHub) pullCommits(ctx context.Context, a api, pull, base, head string) (string, string, error) {
	const op = "github.GetPullRequest"
	resp, err := a.get(ctx, op, pull, "application/vnd.github+json")
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var body struct {
		Base struct {
			SHA string `json:"sha"`
		} `json:"base"`
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body); err != nil {
		return "", "", malformed(op, err)
	}
	if body.Base.SHA == "" || body.Head.SHA == "" {
		return "", "", malformed(op, errors.New("the pull request names no base or head commit"))
	}
	return cmp.Or(base, body.Base.SHA), cmp.Or(head, body.Head.SHA), nil
}

// diff reads a comparison's diff, or, when GitHub will not render it
// whole (406), assembles it from the comparison's files.
func (g *GitHub) diff(ctx context.Context, a api, compare string) (string, bool, error) {
	const op = "github.CompareCommits"
	limit := maxBytes(g.MaxDiffBytes)
	resp, err := a.get(ctx, op, compare, "application/vnd.github.diff")
	if re, ok := errors.AsType[*retry.Error](err); ok && re.Status == http.StatusNotAcceptable {
		// "Sorry, the diff exceeded the maximum number of files/lines":
		// GitHub will not render it whole; assemble it from the files.
		return g.filesDiff(ctx, a, compare, limit)
	}
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, more, err := readLimited(resp.Body, limit)
	if err != nil {
		return "", false, retry.WithOp(err, op)
	}
	// When more is set, b is longer than limit, so it is cut.
	d, cut := TruncateDiff(string(b), limit)
	return d, cut || more, nil
}

type githubFile struct {
	Filename         string `json:"filename"`
	PreviousFilename string `json:"previous_filename"`
	Status           string `json:"status"`
	Patch            string `json:"patch"`
}

// maxGitHubCompareFiles is how many files a comparison lists at most:
// a longer list is cut, and the diff is Truncated.
const maxGitHubCompareFiles = 300

// filesDiff assembles a comparison's diff from its files: GET the
// comparison as JSON, whose first page lists every file (up to 300)
// whatever the page size, which bounds the commits it lists too. The
// answer is decoded as a stream, file by file, and read no further than
// the diff needs.
func (g *GitHub) filesDiff(ctx context.Context, a api, compare string, limit int) (string, bool, error) {
	const op = "github.CompareCommitsFiles"
	resp, err := a.get(ctx, op, compare+"?per_page=1", "application/vnd.github+json")
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	truncated, n := false, 0
	cut, err := eachElement(resp.Body, "files", jsonBodyBound(limit), func(dec *json.Decoder) (bool, error) {
		var f githubFile
		if err := dec.Decode(&f); err != nil {
			return false, err
		}
		n++
		fd := fileDiff{OldPath: f.Filename, NewPath: f.Filename, Patch: f.Patch}
		switch f.Status {
		case "added":
			fd.Added = true
		case "removed":
			fd.Deleted = true
		case "renamed":
			fd.Renamed = f.PreviousFilename != ""
			if fd.Renamed {
				fd.OldPath = f.PreviousFilename
			}
		}
		if f.Patch == "" && f.Status != "renamed" {
			// Binary, or too large for GitHub to include: absent.
			truncated = true
			return true, nil
		}
		fd.render(&b)
		return b.Len() <= limit, nil
	})
	if err != nil {
		return "", false, malformed(op, err)
	}
	d, over := TruncateDiff(b.String(), limit)
	return d, truncated || cut || over || n >= maxGitHubCompareFiles, nil
}

// maxGitHubReviewPages bounds the reviews and team member lists (100 a
// page).
const maxGitHubReviewPages = 10

func (g *GitHub) reviewers(ctx context.Context, a api, pull, owner string) (Reviewers, error) {
	const op = "github.ListRequestedReviewers"
	resp, err := a.get(ctx, op, pull+"/requested_reviewers", "application/vnd.github+json")
	if err != nil {
		return Reviewers{}, err
	}
	var body struct {
		Users []struct {
			Login string `json:"login"`
		} `json:"users"`
		Teams []struct {
			Slug string `json:"slug"`
		} `json:"teams"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil {
		return Reviewers{}, malformed(op, err)
	}
	out := Reviewers{Requested: []Reviewer{}, Reviewed: []Reviewer{}}
	seen := map[string]bool{}
	add := func(login, team string) {
		k := strings.ToLower(login)
		if login == "" || seen[k] {
			return
		}
		seen[k] = true
		out.Requested = append(out.Requested, Reviewer{Username: login, Team: team})
	}
	for _, u := range body.Users {
		add(u.Login, "")
	}
	for _, t := range body.Teams {
		if t.Slug == "" {
			continue
		}
		members, ok, err := g.teamMembers(ctx, a, owner, t.Slug)
		if err != nil {
			return Reviewers{}, err
		}
		if !ok {
			out.UnexpandedTeams = append(out.UnexpandedTeams, owner+"/"+t.Slug)
			continue
		}
		for _, m := range members {
			add(m, t.Slug)
		}
	}
	if out.Reviewed, err = g.reviews(ctx, a, pull); err != nil {
		return Reviewers{}, err
	}
	return out, nil
}

// teamMembers lists a team's logins. ok is false when the token may not
// read them (403, or 404: GitHub hides a team from a token that may not see
// it): the team is reported unexpanded, not failed.
func (g *GitHub) teamMembers(ctx context.Context, a api, org, slug string) ([]string, bool, error) {
	const op = "github.ListTeamMembers"
	var out []string
	for page := 1; page <= maxGitHubReviewPages; page++ {
		resp, err := a.get(ctx, op, g.base()+"/orgs/"+url.PathEscape(org)+"/teams/"+url.PathEscape(slug)+"/members?per_page=100&page="+strconv.Itoa(page),
			"application/vnd.github+json")
		if re, ok := errors.AsType[*retry.Error](err); ok && (re.Class == retry.AuthDenied || re.Class == retry.NotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var users []struct {
			Login string `json:"login"`
		}
		err = json.NewDecoder(resp.Body).Decode(&users)
		resp.Body.Close()
		if err != nil {
			return nil, false, malformed(op, err)
		}
		for _, u := range users {
			out = append(out, u.Login)
		}
		if len(users) < 100 {
			break
		}
	}
	return out, true, nil
}

// reviews lists who submitted a review, each once, with the time of their
// latest. A pending review (not submitted) does not count.
func (g *GitHub) reviews(ctx context.Context, a api, pull string) ([]Reviewer, error) {
	const op = "github.ListReviews"
	out := []Reviewer{}
	at := map[string]int{}
	for page := 1; page <= maxGitHubReviewPages; page++ {
		resp, err := a.get(ctx, op, pull+"/reviews?per_page=100&page="+strconv.Itoa(page), "application/vnd.github+json")
		if err != nil {
			return nil, err
		}
		var reviews []struct {
			User *struct {
				Login string `json:"login"`
			} `json:"user"`
			State       string    `json:"state"`
			SubmittedAt time.Time `json:"submitted_at"`
		}
		err = json.NewDecoder(resp.Body).Decode(&reviews)
		resp.Body.Close()
		if err != nil {
			return nil, malformed(op, err)
		}
		for _, r := range reviews {
			if r.User == nil || r.User.Login == "" || r.State == "PENDING" || r.SubmittedAt.IsZero() {
				continue // a deleted account ("ghost"), or a review not submitted
			}
			k := strings.ToLower(r.User.Login)
			if i, ok := at[k]; ok {
				if r.SubmittedAt.After(out[i].Reviewed) {
					out[i].Reviewed = r.SubmittedAt.UTC()
				}
				continue
			}
			at[k] = len(out)
			out = append(out, Reviewer{Username: r.User.Login, Reviewed: r.SubmittedAt.UTC()})
		}
		if len(reviews) < 100 {
			break
		}
	}
	return out, nil
}
