package devstack

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/webhook"
)

// The GitHub stand-in answers the compare API from the commits pushed,
// as GitHub's REST reference describes the comparison's status: a head
// pushed on the other is ahead, the other way behind, itself identical,
// a force-push's head diverged, an unknown commit 404; its webhooks
// verify with the secret, as GitHub signs them.
// Rules: R-SOURCE-6.
func TestGitHubStandIn_CompareStatusFromTheHistory(t *testing.T) {
	g := NewGitHubStandIn("chaos/x", "b0")
	defer g.Close()
	g.Push("c1", "b0", []byte("diff c1"))
	g.Push("c2", "c1", []byte("diff c2"))
	g.Push("f2", "c1", []byte("diff f2")) // c2 rewritten
	status := func(base, head string) (string, int) {
		req, _ := http.NewRequest(http.MethodGet, g.URL()+"/repos/chaos/x/compare/"+base+"..."+head+"?per_page=1", nil)
		req.Header.Set("Accept", "application/vnd.github+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c GitHubComparison
		_ = json.NewDecoder(resp.Body).Decode(&c)
		return c.Status, resp.StatusCode
	}
	for _, tc := range []struct{ base, head, want string }{
		{"c1", "c2", "ahead"}, {"c2", "c1", "behind"}, {"c2", "c2", "identical"}, {"c2", "f2", "diverged"},
	} {
		if got, code := status(tc.base, tc.head); got != tc.want || code != http.StatusOK {
			t.Errorf("%s...%s: %q (%d), want %q", tc.base, tc.head, got, code, tc.want)
		}
	}
	if _, code := status("c1", "zz"); code != http.StatusNotFound {
		t.Errorf("an unknown commit: %d, want 404", code)
	}
	resp, err := http.Get(g.URL() + "/repos/chaos/x/compare/c1...c2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "diff c2" {
		t.Errorf("the diff of c1...c2: %q", b)
	}
	g.RequestReviewers(7, "octocat")
	resp, err = http.Get(g.URL() + "/repos/chaos/x/pulls/7/requested_reviewers")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"login":"octocat"`) {
		t.Errorf("requested reviewers: %s", b)
	}

	body := GitHubPullRequestEvent("chaos/x", 7, "synchronize", "author", "Title", strings.Repeat("0", 39)+"b", strings.Repeat("1", 40), strings.Repeat("2", 40), []string{"octocat"})
	h := GitHubHeaders("pull_request", "d-1", []byte("s3cret"), body)
	ev, err := webhook.GitHub{Secret: []byte("s3cret")}.ParseEvent(webhook.Request{Header: h.Get, Body: body})
	if err != nil {
		t.Fatalf("the stand-in's synchronize: %v", err)
	}
	if ev.HeadSHA != strings.Repeat("2", 40) || ev.BeforeSHA != strings.Repeat("1", 40) || ev.Change.ChangelistID != "chaos/x#7" {
		t.Errorf("parsed head %q, changelist %q", ev.HeadSHA, ev.Change.ChangelistID)
	}
}

// The Gerrit stand-in serves a file at a commit, at a patch set and at
// its parent (?parent=1) from the commits recorded, behind Gerrit's
// base64, and 404 where the commit lacks it; the branches that hold a
// commit are those whose history does.
// Rules: R-REPO-6.
func TestGerritStandIn_FilesWhereTheyWereCommitted(t *testing.T) {
	g := NewGerritStandIn("p")
	defer g.Close()
	g.Commit("tip", "", nil, "tip", "")
	g.Branch("main", "tip")
	g.Commit("par", "tip", map[string]string{"s.yaml": "skip"}, "parent", "")
	g.Commit("kid", "par", nil, "child", "")
	g.Change(2, "main", 1, "kid")
	get := func(path string) (string, int) {
		resp, err := http.Get(g.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.StatusCode
	}
	if _, code := get("/a/projects/p/commits/tip/files/s.yaml/content"); code != http.StatusNotFound {
		t.Errorf("the settings at the tip: %d, want 404", code)
	}
	if b, code := get("/a/changes/p~2/revisions/1/files/s.yaml/content?parent=1"); code != http.StatusOK || b != "c2tpcA==" {
		t.Errorf("the settings at the patch set's parent: %d %q, want the parent's", code, b)
	}
	if b, _ := get("/a/projects/p/commits/par/in"); !strings.Contains(b, `"branches":[]`) {
		t.Errorf("the unmerged parent is on %s, want no branch", b)
	}
	if b, _ := get("/a/projects/p/commits/tip/in"); !strings.Contains(b, `"main"`) {
		t.Errorf("the tip is on %s, want main", b)
	}
}
