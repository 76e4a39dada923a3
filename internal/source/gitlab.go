package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GitLab fetches merge requests from the GitLab REST API (v4):
//
//   - the diff: GET /projects/:id/merge_requests/:iid/diffs, paginated, each
//     file's hunks reassembled into a git diff; files GitLab withholds
//     (too_large, collapsed) make the result Truncated;
//   - the reviewers: GET /projects/:id/merge_requests/:iid/reviewers,
//     usernames (plus public_email when the API discloses one). GitLab
//     keeps a reviewer listed after they review, so the list is both who
//     is asked and who reviewed; a reviewer taken off the merge request is
//     off it;
//   - the author: GET /projects/:id/merge_requests/:iid (a hook's user is
//     whoever triggered it, not always the author).
//
// :id is Ref.Repo URL-encoded, so a path_with_namespace works as well as a
// numeric id.
type GitLab struct {
	// BaseURL is the API root: "https://gitlab.com/api/v4" when empty.
	BaseURL string
	// Token is sent as the PRIVATE-TOKEN header (a project, group or
	// personal access token with read_api).
	Token string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client
	// MaxDiffBytes caps the diff; zero means DefaultMaxDiffBytes.
	MaxDiffBytes int
	// Now is the clock for rate-limit resets; nil means time.Now.
	Now func() time.Time
}

var _ Fetcher = (*GitLab)(nil)

// maxGitLabPages bounds the diff pagination (100 files a page).
const maxGitLabPages = 50

func (g *GitLab) api() api {
	return newAPI(g.Client, g.Now, func(r *http.Request) {
		if g.Token != "" {
			r.Header.Set("PRIVATE-TOKEN", g.Token)
		}
	})
}

func (g *GitLab) base() string {
	if g.BaseURL == "" {
		return "https://gitlab.com/api/v4"
	}
	return strings.TrimRight(g.BaseURL, "/")
}

func (g *GitLab) mr(ref Ref) (string, error) {
	if err := checkRef("gitlab", ref); err != nil {
		return "", err
	}
	return g.base() + "/projects/" + url.PathEscape(ref.Repo) + "/merge_requests/" + strconv.Itoa(ref.Number), nil
}

// Fetch implements Fetcher.
func (g *GitLab) Fetch(ctx context.Context, ref Ref) (Changelist, error) {
	mr, err := g.mr(ref)
	if err != nil {
		return Changelist{}, err
	}
	a := g.api()
	var cl Changelist
	if cl.Diff, cl.Truncated, err = g.diff(ctx, a, mr); err != nil {
		return Changelist{}, err
	}
	if cl.Reviewers, err = g.reviewers(ctx, a, mr); err != nil {
		return Changelist{}, err
	}
	return cl, nil
}

// Reviewers implements Fetcher.
func (g *GitLab) Reviewers(ctx context.Context, ref Ref) (Reviewers, error) {
	mr, err := g.mr(ref)
	if err != nil {
		return Reviewers{}, err
	}
	return g.reviewers(ctx, g.api(), mr)
}

type gitlabDiff struct {
	OldPath     string `json:"old_path"`
	NewPath     string `json:"new_path"`
	AMode       string `json:"a_mode"`
	BMode       string `json:"b_mode"`
	Diff        string `json:"diff"`
	NewFile     bool   `json:"new_file"`
	RenamedFile bool   `json:"renamed_file"`
	DeletedFile bool   `json:"deleted_file"`
	Collapsed   bool   `json:"collapsed"`
	TooLarge    bool   `json:"too_large"`
}

func (g *GitLab) diff(ctx context.Context, a api, mr string) (string, bool, error) {
	const op = "gitlab.ListMergeRequestDiffs"
	limit := maxBytes(g.MaxDiffBytes)
	var b strings.Builder
	truncated := false
	page := "1"
	for n := 1; page != ""; n++ {
		if n > maxGitLabPages {
			truncated = true
			break
		}
		resp, err := a.get(ctx, op, mr+"/diffs?per_page=100&page="+url.QueryEscape(page), "application/json")
		if err != nil {
			return "", false, err
		}
		var files []gitlabDiff
		err = json.NewDecoder(resp.Body).Decode(&files)
		resp.Body.Close()
		if err != nil {
			return "", false, malformed(op, err)
		}
		for _, f := range files {
			if f.TooLarge || f.Collapsed {
				truncated = true
				continue
			}
			fileDiff{
				OldPath: f.OldPath, NewPath: f.NewPath,
				Added: f.NewFile, Deleted: f.DeletedFile, Renamed: f.RenamedFile,
				OldMode: f.AMode, NewMode: f.BMode,
				Patch: f.Diff,
			}.render(&b)
		}
		page = strings.TrimSpace(resp.Header.Get("X-Next-Page"))
		if b.Len() > limit {
			break // the rest would be cut anyway
		}
	}
	d, cut := TruncateDiff(b.String(), limit)
	return d, truncated || cut, nil
}

func (g *GitLab) reviewers(ctx context.Context, a api, mr string) (Reviewers, error) {
	author, err := g.author(ctx, a, mr)
	if err != nil {
		return Reviewers{}, err
	}
	const op = "gitlab.ListMergeRequestReviewers"
	resp, err := a.get(ctx, op, mr+"/reviewers?per_page=100", "application/json")
	if err != nil {
		return Reviewers{}, err
	}
	defer resp.Body.Close()
	var body []struct {
		User *struct {
			Username    string `json:"username"`
			PublicEmail string `json:"public_email"`
		} `json:"user"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return Reviewers{}, malformed(op, err)
	}
	out := Reviewers{Requested: []Reviewer{}, Reviewed: []Reviewer{}, Author: author}
	seen := map[string]bool{}
	for i, r := range body {
		if r.User == nil || r.User.Username == "" {
			return Reviewers{}, malformed(op, fmt.Errorf("reviewer %d has no username", i))
		}
		k := strings.ToLower(r.User.Username)
		if seen[k] {
			continue
		}
		seen[k] = true
		out.Requested = append(out.Requested, Reviewer{Username: r.User.Username, Email: strings.TrimSpace(r.User.PublicEmail)})
	}
	return out, nil
}

// author reads the merge request's author's username.
func (g *GitLab) author(ctx context.Context, a api, mr string) (string, error) {
	const op = "gitlab.GetMergeRequest"
	resp, err := a.get(ctx, op, mr, "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Author *struct {
			Username string `json:"username"`
		} `json:"author"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body); err != nil {
		return "", malformed(op, err)
	}
	if body.Author == nil {
		return "", nil
	}
	return body.Author.Username, nil
}
