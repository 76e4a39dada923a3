package e2e

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/devstack"
)

// newGerritRepo serves project on api, Gerrit's REST routes under /a/
// (devstack.GerritStandIn, the chaos campaign's Gerrit too): patch and
// reviewers are every patch set's patch (format-patch output) and every
// change's reviewers, unless a test gives a commit or change its own.
func newGerritRepo(api *fakeReviewAPI, project string, patch, reviewers []byte) *devstack.GerritStandIn {
	g := devstack.NewGerritProject(project)
	g.Recorded(patch, reviewers)
	api.mu.Lock()
	defer api.mu.Unlock()
	api.prefixes["GET /a/"] = g.ServeHTTP
	return g
}

// gerritBranchAt answers, for a test that serves a Gerrit change route
// by route, what the fetch stage asks of its destination branch: the
// change's branch (GET /a/changes/{project}~{number}, ChangeInfo), the
// branch's tip (GET /a/projects/{project}/branches/{branch}, BranchInfo)
// and each patch set's parent (…/revisions/{ps}/commit, CommitInfo: the
// tip), as Gerrit's REST API shows them. The settings file is
// absent there (fakeReviewAPI's default).
func (f *fakeReviewAPI) gerritBranchAt(project string, number int, branch, tip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes["GET /a/changes/"+url.PathEscape(project)+"~"+strconv.Itoa(number)] = func(w http.ResponseWriter, _ *http.Request) {
		devstack.GerritJSON(w, map[string]any{"project": project, "branch": branch, "status": "NEW", "_number": number})
	}
	f.routes["GET /a/projects/"+url.PathEscape(project)+"/branches/"+url.PathEscape(branch)] = func(w http.ResponseWriter, _ *http.Request) {
		devstack.GerritJSON(w, map[string]any{"ref": "refs/heads/" + branch, "revision": tip})
	}
	// Every patch set is made on the tip: its diff is against merged code.
	f.prefixes["GET /a/changes/"+url.PathEscape(project)+"~"+strconv.Itoa(number)+"/revisions/"] = func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/commit") {
			http.Error(w, "Not found", http.StatusNotFound)
			return
		}
		devstack.GerritJSON(w, map[string]any{"parents": []any{map[string]any{"commit": tip, "subject": "tip"}}})
	}
}

// settingsReadsGerrit are the requests that read .criticizer.yaml, as
// "<path>?<query>".
func (f *fakeReviewAPI) settingsReadsGerrit() []string {
	var out []string
	for _, r := range f.requests() {
		if strings.Contains(r.URL.Path, ".criticizer.yaml") {
			out = append(out, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		}
	}
	return out
}

// gerritStandIn serves the recorded change (TestRepo1~2, patch set 2 of
// testdata/gerrit/patchset-created.json, on branch patch_create) on a
// new fakeReviewAPI: the recorded patch and reviewers (their addresses
// at domain), the branch at a commit without settings, the patch set's
// parent that commit too. Tests add what their scenario needs.
func gerritStandIn(t *testing.T, domain string) (*fakeReviewAPI, *devstack.GerritStandIn) {
	t.Helper()
	api := newFakeReviewAPI(t)
	g := newGerritRepo(api, "TestRepo1", readFile(t, sourceData+"gerrit/patch.mbox"),
		[]byte(strings.ReplaceAll(string(readFile(t, sourceData+"gerrit/reviewers.json")), "@example.com", "@"+domain)))
	g.Commit(gerritTip, "", map[string]string{"README.md": "# TestRepo1\n"}, "", "")
	g.Branch("patch_create", gerritTip)
	g.Commit(gerritParent, gerritTip, nil, "", "")
	g.Commit(gerritHead, gerritParent, map[string]string{"test.file": "a test\n"}, "", "")
	g.Change(2, "patch_create", 2, gerritHead)
	return api, g
}

// The recorded event's commits: its patch set (patchSet.revision), that
// patch set's parent (patchSet.parents[0]), and the branch's tip.
const (
	gerritHead   = "66e097f59116e761f5473b66b351f7eba63aed50"
	gerritParent = "b8112960b06810405b3e8ce6c8560ee93694700f"
	gerritTip    = "5c1e9a7b3d2f4e6a8c0b1d3f5e7a9c2b4d6f8e0a"
)
