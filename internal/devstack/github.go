package devstack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/criticizer/criticizer/internal/webhook"
)

// GitHubComparison is GitHub's commit comparison (GET
// /repos/{owner}/{repo}/compare/{base}...{head} as JSON), its members in
// GitHub's order, as GitHub's REST reference shows it.
type GitHubComparison struct {
	URL             string         `json:"url"`
	HTMLURL         string         `json:"html_url"`
	PermalinkURL    string         `json:"permalink_url"`
	DiffURL         string         `json:"diff_url"`
	PatchURL        string         `json:"patch_url"`
	BaseCommit      map[string]any `json:"base_commit"`
	MergeBaseCommit map[string]any `json:"merge_base_commit"`
	Status          string         `json:"status"`
	AheadBy         int            `json:"ahead_by"`
	BehindBy        int            `json:"behind_by"`
	TotalCommits    int            `json:"total_commits"`
	Commits         []any          `json:"commits"`
	Files           []any          `json:"files"`
}

// ancestry is c and its ancestors, nearest first; ok is false when parents
// does not hold c.
func ancestry(parents map[string]string, c string) ([]string, bool) {
	var out []string
	for c != "" {
		p, ok := parents[c]
		if !ok {
			return nil, false
		}
		out = append(out, c)
		c = p
	}
	return out, true
}

// CompareCommits is GitHub's comparison of base and head in repo
// ("owner/name") whose history is parents (each commit's parent, "" for a
// root): head "ahead" when base is among its ancestors, "behind" when head
// is among base's, "identical" when they are one, "diverged" otherwise (a
// force-push left base off the branch). ok is false where GitHub answers
// 404: a commit parents does not hold, or no common history. With
// parents nil the history is a branch only ever pushed to: head is ahead.
func CompareCommits(repo string, parents map[string]string, base, head string) (c GitHubComparison, ok bool) {
	api := "https://api.github.com/repos/" + repo
	web := "https://github.com/" + repo
	owner, _, _ := strings.Cut(repo, "/")
	commit := func(sha string) map[string]any {
		return map[string]any{"sha": sha, "url": api + "/commits/" + sha, "commit": map[string]any{"message": "commit " + sha[:min(7, len(sha))]}}
	}
	c = GitHubComparison{URL: api + "/compare/" + base + "..." + head, HTMLURL: web + "/compare/" + base + "..." + head,
		PermalinkURL: web + "/compare/" + owner + ":" + base + "..." + owner + ":" + head,
		DiffURL:      web + "/compare/" + base + "..." + head + ".diff",
		PatchURL:     web + "/compare/" + base + "..." + head + ".patch",
		BaseCommit:   commit(base), MergeBaseCommit: commit(base), Commits: []any{}, Files: []any{}}
	if parents == nil {
		c.Status, c.AheadBy, c.TotalCommits = "ahead", 1, 1
		c.Commits = []any{commit(head)}
		return c, true
	}
	bs, okb := ancestry(parents, base)
	hs, okh := ancestry(parents, head)
	if !okb || !okh {
		return GitHubComparison{}, false
	}
	// The merge base: head's nearest ancestor that is base's too.
	mb := -1
	for i, h := range hs {
		if slices.Contains(bs, h) {
			mb = i
			break
		}
	}
	if mb < 0 {
		return GitHubComparison{}, false // no common history: GitHub answers 404
	}
	c.MergeBaseCommit = commit(hs[mb])
	c.AheadBy, c.BehindBy = mb, slices.Index(bs, hs[mb])
	switch {
	case c.AheadBy == 0 && c.BehindBy == 0:
		c.Status = "identical"
	case c.BehindBy == 0:
		c.Status = "ahead"
	case c.AheadBy == 0:
		c.Status = "behind"
	default:
		c.Status = "diverged"
	}
	c.TotalCommits = c.AheadBy
	for _, h := range hs[:mb] {
		c.Commits = append([]any{commit(h)}, c.Commits...)
	}
	return c, true
}

// ServeCompare answers GET /repos/{repo}/compare/{base}...{head} (rest
// is the part after "compare/") as GitHub does: with Accept:
// application/vnd.github.diff, diffOf(base, head) as text; as JSON, the
// comparison of CompareCommits, or GitHub's 404.
func ServeCompare(w http.ResponseWriter, r *http.Request, repo, rest string, parents map[string]string, diffOf func(base, head string) []byte) {
	base, head, _ := strings.Cut(rest, "...")
	if !strings.Contains(r.Header.Get("Accept"), "json") {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(diffOf(base, head))
		return
	}
	c, ok := CompareCommits(repo, parents, base, head)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest/commits/commits#compare-two-commits","status":"404"}`))
		return
	}
	_ = json.NewEncoder(w).Encode(c)
}

// GitHubStandIn is a GitHub REST API for one repository's pull requests,
// enough for the fetch stage (internal/source.GitHub): the compare API
// from a commit history (each head's diff is the one pushed with it), the
// requested reviewers of each pull request, no reviews, and 404 for every
// file (no settings, R-REPO-1); and for the code-host channels
// (internal/codehost) its check runs and commit statuses (GitHubChecks),
// with answers lost after the work on demand (Loss). The chaos campaign pushes through it
// (internal/chaos, the code host's versions part); the e2e tests have
// their own recorded stand-in (internal/e2e) and share CompareCommits.
type GitHubStandIn struct {
	// Repo is the repository's full name, "owner/name"; Base the
	// commit its branches start at.
	Repo, Base string

	// Checks are its check runs and commit statuses (on commits it
	// holds), Loss the answers it drops after the work.
	Checks *GitHubChecks
	Loss   AnswerLoss

	srv       *httptest.Server
	mu        sync.Mutex
	parents   map[string]string
	diffs     map[string][]byte
	reviewers map[int][]string
}

// NewGitHubStandIn starts a stand-in for repo whose branches start at
// base.
func NewGitHubStandIn(repo, base string) *GitHubStandIn {
	g := &GitHubStandIn{Repo: repo, Base: base, parents: map[string]string{base: ""}, diffs: map[string][]byte{}, reviewers: map[int][]string{}}
	g.Checks = &GitHubChecks{Repo: repo, Known: func(sha string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		_, ok := g.parents[sha]
		return ok
	}}
	g.srv = httptest.NewServer(g.Loss.Wrap(g))
	return g
}

// URL is the API's base URL (config.GitHub.APIURL).
func (g *GitHubStandIn) URL() string { return g.srv.URL }

// Close stops it.
func (g *GitHubStandIn) Close() { g.srv.Close() }

// Push records commit, on parent, whose comparison with the base shows
// diff: a push, or a force-push when parent is not the branch's head.
func (g *GitHubStandIn) Push(commit, parent string, diff []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.parents[commit], g.diffs[commit] = parent, diff
}

// RequestReviewers sets pull request pr's requested reviewers.
func (g *GitHubStandIn) RequestReviewers(pr int, logins ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reviewers[pr] = slices.Clone(logins)
}

func (g *GitHubStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.Checks.Serve(w, r) {
		return
	}
	prefix := "/repos/" + g.Repo + "/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if r.Method != http.MethodGet || !ok {
		notFound(w)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cmp, ok := strings.CutPrefix(rest, "compare/"); ok {
		ServeCompare(w, r, g.Repo, cmp, g.parents, func(_, head string) []byte { return g.diffs[head] })
		return
	}
	if pull, ok := strings.CutPrefix(rest, "pulls/"); ok {
		num, what, _ := strings.Cut(pull, "/")
		n, err := strconv.Atoi(num)
		if err != nil {
			notFound(w)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch what {
		case "requested_reviewers":
			users := []map[string]any{}
			for _, l := range g.reviewers[n] {
				users = append(users, map[string]any{"login": l, "type": "User"})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"users": users, "teams": []any{}})
		case "reviews":
			_, _ = w.Write([]byte("[]"))
		default:
			notFound(w)
		}
		return
	}
	notFound(w)
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`))
}

// GitHubPullRequestEvent is a pull_request webhook's body as GitHub
// sends it, with the members intake reads: action ("opened",
// "synchronize"), the pull request (number, state, title, links, author,
// head and base commits, requested reviewers) and, for a synchronize,
// before and after (the head the push moved from, and to).
func GitHubPullRequestEvent(repo string, pr int, action, author, title, base, before, head string, reviewers []string) []byte {
	web := "https://github.com/" + repo + "/pull/" + strconv.Itoa(pr)
	rr := []map[string]any{}
	for _, l := range reviewers {
		rr = append(rr, map[string]any{"login": l, "type": "User"})
	}
	m := map[string]any{"action": action, "number": pr,
		"pull_request": map[string]any{"url": "https://api.github.com/repos/" + repo + "/pulls/" + strconv.Itoa(pr),
			"number": pr, "state": "open", "draft": false, "title": title, "body": nil,
			"html_url": web, "diff_url": web + ".diff", "user": map[string]any{"login": author, "type": "User"},
			"head":                map[string]any{"sha": head, "ref": "change-" + strconv.Itoa(pr), "repo": map[string]any{"full_name": repo}},
			"base":                map[string]any{"sha": base, "ref": "main", "repo": map[string]any{"full_name": repo}},
			"requested_reviewers": rr, "requested_teams": []any{}},
		"repository": map[string]any{"full_name": repo, "name": repo[strings.IndexByte(repo, '/')+1:]},
		"sender":     map[string]any{"login": author, "type": "User"}}
	if action == "synchronize" {
		m["before"], m["after"] = before, head
	}
	b, _ := json.Marshal(m)
	return b
}

// GitHubHeaders are the headers GitHub sends a webhook with: its event,
// its delivery id (kept by a redelivery) and its HMAC-SHA256 signature
// with the webhook's secret.
func GitHubHeaders(event, delivery string, secret, body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/chaos")
	h.Set(webhook.GitHubEventHeader, event)
	h.Set(webhook.GitHubDeliveryHeader, delivery)
	h.Set(webhook.GitHubSignatureHeader, webhook.Sign(secret, body))
	return h
}
