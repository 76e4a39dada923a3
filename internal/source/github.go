package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
//   - the diff: GET /repos/{owner}/{repo}/pulls/{number} with
//     Accept: application/vnd.github.diff; when GitHub refuses to render a
//     diff that large (406), the per-file patches of
//     GET /repos/{owner}/{repo}/pulls/{number}/files are assembled instead,
//     and files GitHub serves without a patch make the result Truncated;
//   - the reviewers: GET /repos/{owner}/{repo}/pulls/{number}/requested_reviewers,
//     the users only (teams are not expanded), logins without e-mail
//     addresses (GitHub does not disclose them; see Directory).
//
// Note that GitHub forgets a requested reviewer once they have submitted a
// review: a later review version is sent to those still requested.
type GitHub struct {
	// BaseURL is the API root: "https://api.github.com" when empty, or
	// "https://HOST/api/v3" for GitHub Enterprise Server.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" (a fine-grained
	// token or installation token with pull requests: read). Empty sends
	// no credentials, which only works for public repositories.
	Token string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client
	// MaxDiffBytes caps the diff; zero means DefaultMaxDiffBytes.
	MaxDiffBytes int
	// Now is the clock for rate-limit resets; nil means time.Now.
	Now func() time.Time
}

var _ Fetcher = (*GitHub)(nil)

// maxGitHubFilePages bounds the files fallback: GitHub lists at most 3000
// files, 100 a page.
const maxGitHubFilePages = 30

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

// Fetch implements Fetcher.
func (g *GitHub) Fetch(ctx context.Context, ref Ref) (Changelist, error) {
	if err := checkRef("github", ref); err != nil {
		return Changelist{}, err
	}
	owner, repo, ok := strings.Cut(ref.Repo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return Changelist{}, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("source: github repository must be owner/repo"))
	}
	pull := g.base() + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/pulls/" + strconv.Itoa(ref.Number)
	a := g.api()
	var cl Changelist
	var err error
	cl.Diff, cl.Truncated, err = g.diff(ctx, a, pull)
	if err != nil {
		return Changelist{}, err
	}
	if cl.Reviewers, err = g.reviewers(ctx, a, pull); err != nil {
		return Changelist{}, err
	}
	return cl, nil
}

func (g *GitHub) diff(ctx context.Context, a api, pull string) (string, bool, error) {
	const op = "github.GetPullRequestDiff"
	limit := maxBytes(g.MaxDiffBytes)
	resp, err := a.get(ctx, op, pull, "application/vnd.github.diff")
	if re, ok := errors.AsType[*retry.Error](err); ok && re.Status == http.StatusNotAcceptable {
		// "Sorry, the diff exceeded the maximum number of files/lines":
		// GitHub will not render it whole; assemble it from the files.
		return g.filesDiff(ctx, a, pull, limit)
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

func (g *GitHub) filesDiff(ctx context.Context, a api, pull string, limit int) (string, bool, error) {
	const op = "github.ListPullRequestFiles"
	var b strings.Builder
	truncated := false
	for page := 1; ; page++ {
		if page > maxGitHubFilePages {
			truncated = true
			break
		}
		resp, err := a.get(ctx, op, pull+"/files?per_page=100&page="+strconv.Itoa(page), "application/vnd.github+json")
		if err != nil {
			return "", false, err
		}
		var files []githubFile
		err = json.NewDecoder(resp.Body).Decode(&files)
		resp.Body.Close()
		if err != nil {
			return "", false, malformed(op, err)
		}
		for _, f := range files {
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
				continue
			}
			fd.render(&b)
			if b.Len() > limit {
				break
			}
		}
		if len(files) < 100 || b.Len() > limit {
			break
		}
	}
	d, cut := TruncateDiff(b.String(), limit)
	return d, truncated || cut, nil
}

func (g *GitHub) reviewers(ctx context.Context, a api, pull string) ([]Reviewer, error) {
	const op = "github.ListRequestedReviewers"
	resp, err := a.get(ctx, op, pull+"/requested_reviewers", "application/vnd.github+json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Users []struct {
			Login string `json:"login"`
		} `json:"users"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, malformed(op, err)
	}
	out := []Reviewer{}
	seen := map[string]bool{}
	for _, u := range body.Users {
		k := strings.ToLower(u.Login)
		if u.Login == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Reviewer{Username: u.Login})
	}
	return out, nil
}
