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

	"github.com/criticizer/criticizer/internal/retry"
)

// GitLab fetches merge requests from the GitLab REST API (v4):
//
//   - the diff of the commit the event named (R-SOURCE-5): the merge
//     request version whose head_commit_sha is Ref.HeadSHA, found in GET
//     /projects/:id/merge_requests/:iid/versions (newest first), and its
//     diffs, GET /projects/:id/merge_requests/:iid/versions/:version_id,
//     each file's hunks reassembled into a git diff — never the merge
//     request's diffs, which are of its head now, whatever the event said.
//     The version's base_commit_sha is the Changelist's BaseSHA. Files
//     GitLab withholds (too_large, collapsed) make the result Truncated. A
//     version GitLab has not listed yet is a retryable NOT_FOUND: GitLab
//     writes a push's version as it refreshes the merge request;
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

// maxGitLabPages bounds the versions' pagination (100 a page).
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
	v, err := g.version(ctx, a, mr, ref.HeadSHA)
	if err != nil {
		return Changelist{}, err
	}
	cl := Changelist{BaseSHA: v.BaseCommitSHA}
	if cl.Diff, cl.Truncated, err = g.diff(ctx, a, mr+"/versions/"+strconv.FormatInt(v.ID, 10)); err != nil {
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

// gitlabVersion is one merge request version (a push), as GET
// .../versions lists it.
type gitlabVersion struct {
	ID            int64  `json:"id"`
	HeadCommitSHA string `json:"head_commit_sha"`
	BaseCommitSHA string `json:"base_commit_sha"`
}

// version finds the merge request version whose head is head; with no
// head, the newest.
func (g *GitLab) version(ctx context.Context, a api, mr, head string) (gitlabVersion, error) {
	const op = "gitlab.ListMergeRequestVersions"
	page := "1"
	for n := 1; page != "" && n <= maxGitLabPages; n++ {
		resp, err := a.get(ctx, op, mr+"/versions?per_page=100&page="+url.QueryEscape(page), "application/json")
		if err != nil {
			return gitlabVersion{}, err
		}
		var vs []gitlabVersion
		err = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&vs)
		resp.Body.Close()
		if err != nil {
			return gitlabVersion{}, malformed(op, err)
		}
		for _, v := range vs {
			if head == "" || strings.EqualFold(v.HeadCommitSHA, head) {
				if v.BaseCommitSHA == "" {
					return gitlabVersion{}, malformed(op, fmt.Errorf("version %d has no base commit", v.ID))
				}
				return v, nil
			}
		}
		page = strings.TrimSpace(resp.Header.Get("X-Next-Page"))
	}
	// GitLab writes a push's version as it refreshes the merge request,
	// which may finish after the hook: retried.
	return gitlabVersion{}, retry.Transient(retry.NotFound,
		fmt.Errorf("%s: no version of the merge request has the event's head commit yet", op))
}

var _ Orderer = (*GitLab)(nil)

// Standing implements Orderer with the merge request's versions
// (R-SOURCE-6): GitLab records one per push, a force-push included, and
// lists them newest first with increasing ids (GET
// /projects/:id/merge_requests/:iid/versions); the head's version is
// ahead of other's when its id is higher. A head not listed yet is
// retried, as the fetch is (GitLab writes a push's version as it
// refreshes the merge request); an other GitLab does not list is
// Diverged: it cannot be ahead.
func (g *GitLab) Standing(ctx context.Context, ref Ref, other string) (Standing, error) {
	const op = "gitlab.ListMergeRequestVersions"
	mr, err := g.mr(ref)
	if err != nil {
		return 0, err
	}
	if strings.EqualFold(ref.HeadSHA, other) {
		return Identical, nil
	}
	var head, old int64 = -1, -1
	a := g.api()
	page := "1"
	for n := 1; page != "" && n <= maxGitLabPages && (head < 0 || old < 0); n++ {
		resp, err := a.get(ctx, op, mr+"/versions?per_page=100&page="+url.QueryEscape(page), "application/json")
		if err != nil {
			return 0, err
		}
		var vs []gitlabVersion
		err = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&vs)
		resp.Body.Close()
		if err != nil {
			return 0, malformed(op, err)
		}
		for _, v := range vs {
			// A head pushed twice (back and forth) has several versions:
			// its newest counts, the first met in this newest-first list.
			switch {
			case head < 0 && strings.EqualFold(v.HeadCommitSHA, ref.HeadSHA):
				head = v.ID
			case old < 0 && strings.EqualFold(v.HeadCommitSHA, other):
				old = v.ID
			}
		}
		page = strings.TrimSpace(resp.Header.Get("X-Next-Page"))
	}
	switch {
	case head < 0:
		return 0, retry.Transient(retry.NotFound,
			fmt.Errorf("%s: no version of the merge request has the event's head commit yet", op))
	case old < 0:
		return Diverged, nil
	case head > old:
		return Ahead, nil
	}
	return Behind, nil
}

// diff reads a merge request version's diffs, streamed file by file and
// no further than the limit needs.
func (g *GitLab) diff(ctx context.Context, a api, version string) (string, bool, error) {
	const op = "gitlab.GetMergeRequestVersion"
	limit := maxBytes(g.MaxDiffBytes)
	resp, err := a.get(ctx, op, version, "application/json")
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	truncated := false
	cut, err := eachElement(resp.Body, "diffs", jsonBodyBound(limit), func(dec *json.Decoder) (bool, error) {
		var f gitlabDiff
		if err := dec.Decode(&f); err != nil {
			return false, err
		}
		if f.TooLarge || f.Collapsed {
			truncated = true
			return true, nil
		}
		fileDiff{
			OldPath: f.OldPath, NewPath: f.NewPath,
			Added: f.NewFile, Deleted: f.DeletedFile, Renamed: f.RenamedFile,
			OldMode: f.AMode, NewMode: f.BMode,
			Patch: f.Diff,
		}.render(&b)
		return b.Len() <= limit, nil // the rest would be cut anyway
	})
	if err != nil {
		return "", false, malformed(op, err)
	}
	d, over := TruncateDiff(b.String(), limit)
	return d, truncated || cut || over, nil
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
