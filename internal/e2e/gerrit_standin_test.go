package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// gerritRepo is a Gerrit project as its REST API shows it to the fetch
// stage: commits (their files and first parent), branches, and open
// changes whose patch sets are commits. It answers, on a fakeReviewAPI,
// the routes Gerrit's REST documentation gives, each JSON answer behind
// Gerrit's ")]}'" line and each file's content in base64
// (rest-api-changes, rest-api-projects):
//
//	GET /a/changes/{project}~{number}                                  ChangeInfo
//	GET /a/changes/{project}~{number}/revisions/{ps}/patch             the patch set's patch
//	GET /a/changes/{project}~{number}/reviewers/                       ReviewerInfo list
//	GET /a/changes/{project}~{number}/revisions/{ps}/files/{f}/content a file of the patch set,
//	                                                                   or of its first parent (?parent=1)
//	GET /a/changes/{project}~{number}/revisions/{ps}/commit            CommitInfo (its parents)
//	GET /a/projects/{project}/branches/{branch}                        BranchInfo
//	GET /a/projects/{project}/commits/{commit}/files/{f}/content       a file of a commit
//	GET /a/projects/{project}/commits/{commit}/in                      IncludedInInfo (the branches
//	                                                                   whose history holds it)
//
// A file, change, branch or commit it does not hold is 404, as Gerrit
// answers.
type gerritRepo struct {
	mu       sync.Mutex
	project  string
	files    map[string]map[string]string // commit → path → content
	parent   map[string]string            // commit → first parent
	branches map[string]string            // name → commit
	changes  map[int]*gerritChange
	// patch and reviewers are every change's (the recorded ones), unless
	// patches holds a commit's own.
	patch, reviewers []byte
	patches          map[string][]byte
}

type gerritChange struct {
	branch    string
	patchSets map[int]string // number → commit
	hashtags  []string
}

// newGerritRepo serves project on api: patch and reviewers are every
// patch set's patch (format-patch output) and every change's reviewers.
func newGerritRepo(api *fakeReviewAPI, project string, patch, reviewers []byte) *gerritRepo {
	g := &gerritRepo{project: project, files: map[string]map[string]string{}, parent: map[string]string{},
		branches: map[string]string{}, changes: map[int]*gerritChange{}, patch: patch, reviewers: reviewers,
		patches: map[string][]byte{}}
	api.mu.Lock()
	defer api.mu.Unlock()
	api.prefixes["GET /a/"] = g.serve
	return g
}

// commit records a commit: its first parent and its files (the parent's
// with these added).
func (g *gerritRepo) commit(sha, parent string, add map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	files := map[string]string{}
	for p, c := range g.files[parent] {
		files[p] = c
	}
	for p, c := range add {
		files[p] = c
	}
	g.files[sha], g.parent[sha] = files, parent
}

// patchOf makes diff the patch of commit sha, as format-patch writes it.
func (g *gerritRepo) patchOf(sha, subject, diff string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.patches[sha] = []byte("From " + sha + " Mon Sep 17 00:00:00 2001\nFrom: Administrator <admin@example.com>\n" +
		"Date: Mon, 20 Nov 2023 11:33:15 +0000\nSubject: [PATCH] " + subject + "\n\n---\n" + diff + "-- \n2.39.2\n\n")
}

// includes reports whether branch's history holds commit.
func (g *gerritRepo) includes(branch, commit string) bool {
	for c := g.branches[branch]; c != ""; c = g.parent[c] {
		if c == commit {
			return true
		}
	}
	return false
}

func (g *gerritRepo) branch(name, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.branches[name] = sha
}

// change records an open change on branch whose patch set ps is commit
// sha.
func (g *gerritRepo) change(number int, branch string, ps int, sha string, hashtags ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.changes[number]
	if c == nil {
		c = &gerritChange{branch: branch, patchSets: map[int]string{}}
		g.changes[number] = c
	}
	c.patchSets[ps], c.hashtags = sha, hashtags
}

func gerritJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write([]byte(")]}'\n"))
	w.Write(b)
}

func (g *gerritRepo) content(w http.ResponseWriter, sha, path string) {
	c, ok := g.files[sha][path]
	if !ok {
		http.Error(w, "Not found: "+path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
	w.Write([]byte(base64.StdEncoding.EncodeToString([]byte(c))))
}

func (g *gerritRepo) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var seg []string
	for _, s := range strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/a/"), "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		seg = append(seg, u)
	}
	notFound := func() { http.Error(w, "Not found: "+r.URL.Path, http.StatusNotFound) }
	switch {
	case len(seg) >= 2 && seg[0] == "changes":
		project, num, _ := strings.Cut(seg[1], "~")
		n, _ := strconv.Atoi(num)
		c := g.changes[n]
		if project != g.project || c == nil {
			notFound()
			return
		}
		rest := seg[2:]
		switch {
		case len(rest) == 0:
			gerritJSON(w, map[string]any{"id": g.project + "~" + c.branch + "~I" + num, "project": g.project, "branch": c.branch,
				"hashtags": c.hashtags, "status": "NEW", "_number": n})
		case len(rest) == 2 && rest[0] == "reviewers" && rest[1] == "": // GET …/reviewers/
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.Write(g.reviewers)
		case len(rest) >= 3 && rest[0] == "revisions":
			ps, _ := strconv.Atoi(rest[1])
			sha, ok := c.patchSets[ps]
			switch {
			case !ok:
				notFound()
			case len(rest) == 3 && rest[2] == "patch":
				patch, ok := g.patches[sha]
				if !ok {
					patch = g.patch
				}
				w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
				w.Write([]byte(base64.StdEncoding.EncodeToString(patch)))
			case len(rest) == 3 && rest[2] == "commit":
				parents := []any{}
				if p := g.parent[sha]; p != "" {
					parents = append(parents, map[string]any{"commit": p, "subject": "parent"})
				}
				gerritJSON(w, map[string]any{"commit": sha, "parents": parents, "subject": "patch set"})
			case len(rest) == 5 && rest[2] == "files" && rest[4] == "content":
				if r.URL.Query().Get("parent") == "1" {
					sha = g.parent[sha]
				}
				g.content(w, sha, rest[3])
			default:
				notFound()
			}
		default:
			notFound()
		}
	case len(seg) >= 4 && seg[0] == "projects" && seg[1] == g.project && seg[2] == "branches":
		sha, ok := g.branches[strings.TrimPrefix(seg[3], "refs/heads/")]
		if !ok || len(seg) != 4 {
			notFound()
			return
		}
		gerritJSON(w, map[string]any{"ref": "refs/heads/" + strings.TrimPrefix(seg[3], "refs/heads/"), "revision": sha})
	case len(seg) == 5 && seg[0] == "projects" && seg[1] == g.project && seg[2] == "commits" && seg[4] == "in":
		if _, ok := g.files[seg[3]]; !ok {
			notFound()
			return
		}
		branches := []string{}
		for b := range g.branches {
			if g.includes(b, seg[3]) {
				branches = append(branches, b)
			}
		}
		gerritJSON(w, map[string]any{"branches": branches, "tags": []string{}})
	case len(seg) == 7 && seg[0] == "projects" && seg[1] == g.project && seg[2] == "commits" && seg[4] == "files" && seg[6] == "content":
		if _, ok := g.files[seg[3]]; !ok {
			notFound()
			return
		}
		g.content(w, seg[3], seg[5])
	default:
		notFound()
	}
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
		gerritJSON(w, map[string]any{"project": project, "branch": branch, "status": "NEW", "_number": number})
	}
	f.routes["GET /a/projects/"+url.PathEscape(project)+"/branches/"+url.PathEscape(branch)] = func(w http.ResponseWriter, _ *http.Request) {
		gerritJSON(w, map[string]any{"ref": "refs/heads/" + branch, "revision": tip})
	}
	// Every patch set is made on the tip: its diff is against merged code.
	f.prefixes["GET /a/changes/"+url.PathEscape(project)+"~"+strconv.Itoa(number)+"/revisions/"] = func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/commit") {
			http.Error(w, "Not found", http.StatusNotFound)
			return
		}
		gerritJSON(w, map[string]any{"parents": []any{map[string]any{"commit": tip, "subject": "tip"}}})
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
func gerritStandIn(t *testing.T, domain string) (*fakeReviewAPI, *gerritRepo) {
	t.Helper()
	api := newFakeReviewAPI(t)
	g := newGerritRepo(api, "TestRepo1", readFile(t, sourceData+"gerrit/patch.mbox"),
		[]byte(strings.ReplaceAll(string(readFile(t, sourceData+"gerrit/reviewers.json")), "@example.com", "@"+domain)))
	g.commit(gerritTip, "", map[string]string{"README.md": "# TestRepo1\n"})
	g.branch("patch_create", gerritTip)
	g.commit(gerritParent, gerritTip, nil)
	g.commit(gerritHead, gerritParent, map[string]string{"test.file": "a test\n"})
	g.change(2, "patch_create", 2, gerritHead)
	return api, g
}

// The recorded event's commits: its patch set (patchSet.revision), that
// patch set's parent (patchSet.parents[0]), and the branch's tip.
const (
	gerritHead   = "66e097f59116e761f5473b66b351f7eba63aed50"
	gerritParent = "b8112960b06810405b3e8ce6c8560ee93694700f"
	gerritTip    = "5c1e9a7b3d2f4e6a8c0b1d3f5e7a9c2b4d6f8e0a"
)
