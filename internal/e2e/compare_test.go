package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// githubCompare makes the stand-in answer GitHub's compare API for
// Codertocat/Hello-World, GET /repos/{owner}/{repo}/compare/{base}...{head},
// as GitHub's REST reference shows it:
//
//   - with Accept: application/vnd.github.diff, the diff diffOf(base,
//     head) as text;
//   - as JSON (application/vnd.github+json), the comparison: url,
//     html_url, permalink_url, diff_url, patch_url, base_commit,
//     merge_base_commit, then status ("ahead", "behind", "identical",
//     "diverged"), ahead_by, behind_by, total_commits, commits and files.
//     The status comes from parents, each commit's parent ("" for a
//     root): head ahead when base is among its ancestors, behind when head
//     is among base's, identical when they are one, diverged otherwise; a
//     commit parents does not hold is GitHub's 404. With parents nil the
//     history is a branch only ever pushed to: head is ahead.
func (f *fakeReviewAPI) githubCompare(diffOf func(base, head string) []byte, parents map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prefixes["GET /repos/Codertocat/Hello-World/compare/"] = func(w http.ResponseWriter, r *http.Request) {
		base, head, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/repos/Codertocat/Hello-World/compare/"), "...")
		if !strings.Contains(r.Header.Get("Accept"), "json") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(diffOf(base, head))
			return
		}
		c, ok := compareCommits(parents, base, head)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest/commits/commits#compare-two-commits","status":"404"}`))
			return
		}
		json.NewEncoder(w).Encode(c)
	}
}

// comparison is GitHub's commit comparison, its members in GitHub's order.
type comparison struct {
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

// compareCommits is the comparison of base and head.
func compareCommits(parents map[string]string, base, head string) (comparison, bool) {
	const repo = "https://api.github.com/repos/Codertocat/Hello-World"
	commit := func(sha string) map[string]any {
		return map[string]any{"sha": sha, "url": repo + "/commits/" + sha, "commit": map[string]any{"message": "commit " + sha[:7]}}
	}
	c := comparison{URL: repo + "/compare/" + base + "..." + head, HTMLURL: "https://github.com/Codertocat/Hello-World/compare/" + base + "..." + head,
		PermalinkURL: "https://github.com/Codertocat/Hello-World/compare/Codertocat:" + base + "...Codertocat:" + head,
		DiffURL:      "https://github.com/Codertocat/Hello-World/compare/" + base + "..." + head + ".diff",
		PatchURL:     "https://github.com/Codertocat/Hello-World/compare/" + base + "..." + head + ".patch",
		BaseCommit:   commit(base), MergeBaseCommit: commit(base), Commits: []any{}, Files: []any{}}
	if parents == nil {
		c.Status, c.AheadBy, c.TotalCommits = "ahead", 1, 1
		c.Commits = []any{commit(head)}
		return c, true
	}
	bs, okb := ancestry(parents, base)
	hs, okh := ancestry(parents, head)
	if !okb || !okh {
		return comparison{}, false
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
		return comparison{}, false // no common history: GitHub answers 404
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
