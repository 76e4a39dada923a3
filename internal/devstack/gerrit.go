package devstack

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GerritStandIn is a Gerrit project as its REST API shows it to the
// fetch stage (internal/source.Gerrit), for the chaos campaign's stacked
// change: commits (their files and first parent), branches, and open
// changes whose patch sets are commits, each with its patch and
// reviewers. It answers the routes Gerrit's REST documentation gives,
// each JSON answer behind Gerrit's ")]}'" line and each file's content
// in base64 (rest-api-changes, rest-api-projects): the change, a patch
// set's patch, commit and files (?parent=1: its first parent's), the
// change's reviewers, a branch, a commit's files and the branches that
// hold it. A file, change, branch or commit it does not hold is 404, as
// Gerrit answers. The e2e tests mount the same model on their recorded
// answers (NewGerritProject, Recorded).
type GerritStandIn struct {
	Project string
	// Loss drops answers after the work (its own server only; a mount
	// wraps its handler with it).
	Loss AnswerLoss

	srv       *httptest.Server
	mu        sync.Mutex
	files     map[string]map[string]string // commit → path → content
	parent    map[string]string            // commit → first parent
	branches  map[string]string            // name → commit
	changes   map[int]*gerritChange
	patches   map[string][]byte
	reviewers map[int][]GerritAccount
	// recordedPatch and recordedReviewers answer for a commit with no
	// patch of its own and a change with no reviewers of its own
	// (Recorded).
	recordedPatch, recordedReviewers []byte
	// messages are each change's messages (review messages posted to
	// it), labels the labels a review may vote on.
	messages map[int][]GerritMessage
	labels   []string
	nextMsg  int
}

// GerritMessage is Gerrit's ChangeMessageInfo, with the votes the
// review that posted it cast (Labels; not in Gerrit's answer).
type GerritMessage struct {
	ID             string         `json:"id"`
	Tag            string         `json:"tag,omitempty"`
	Author         GerritAccount  `json:"author"`
	Date           string         `json:"date"`
	Message        string         `json:"message"`
	RevisionNumber int            `json:"_revision_number"`
	Labels         map[string]int `json:"-"`
	Notify         string         `json:"-"`
}

type gerritChange struct {
	branch    string
	patchSets map[int]string // number → commit
	hashtags  []string
}

// GerritAccount is Gerrit's AccountInfo.
type GerritAccount struct {
	Name     string `json:"name,omitempty"`
	Email    string `json:"email,omitempty"`
	Username string `json:"username,omitempty"`
}

// NewGerritStandIn starts a stand-in for project on a server of its own.
func NewGerritStandIn(project string) *GerritStandIn {
	g := NewGerritProject(project)
	g.srv = httptest.NewServer(g.Loss.Wrap(g))
	return g
}

// NewGerritProject is project's stand-in without a server: its
// ServeHTTP answers the /a/ routes wherever it is mounted.
func NewGerritProject(project string) *GerritStandIn {
	return &GerritStandIn{Project: project, files: map[string]map[string]string{}, parent: map[string]string{},
		branches: map[string]string{}, changes: map[int]*gerritChange{}, patches: map[string][]byte{}, reviewers: map[int][]GerritAccount{},
		messages: map[int][]GerritMessage{}, labels: []string{"Code-Review"}}
}

// Labels sets the labels a review may vote on (Code-Review by default).
func (g *GerritStandIn) Labels(names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.labels = slices.Clone(names)
}

// Messages are change number's messages, oldest first.
func (g *GerritStandIn) Messages(number int) []GerritMessage {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.messages[number])
}

// revision resolves a revision id of change c as Gerrit does: a patch
// set number, a commit (its full name), or "current" (the highest patch
// set).
func (c *gerritChange) revision(id string) (int, string, bool) {
	if ps, err := strconv.Atoi(id); err == nil {
		sha, ok := c.patchSets[ps]
		return ps, sha, ok
	}
	best, bestSHA := 0, ""
	for ps, sha := range c.patchSets {
		if (id == "current" && ps > best) || strings.EqualFold(sha, id) {
			best, bestSHA = ps, sha
		}
	}
	return best, bestSHA, best > 0
}

// review posts a review (ReviewInput: message, tag, labels, notify) on
// patch set ps of change number as Gerrit does: the message stored as
// "Patch Set N: <votes>\n\n<message>", a label the project lacks or a
// vote out of -2..+2 refused with 400; it answers a ReviewResult.
func (g *GerritStandIn) review(w http.ResponseWriter, r *http.Request, number, ps int) {
	var in struct {
		Message string         `json:"message"`
		Tag     string         `json:"tag"`
		Labels  map[string]int `json:"labels"`
		Notify  string         `json:"notify"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, "Invalid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	head := "Patch Set " + strconv.Itoa(ps) + ":"
	names := make([]string, 0, len(in.Labels))
	for l := range in.Labels {
		names = append(names, l)
	}
	slices.Sort(names)
	for _, l := range names {
		v := in.Labels[l]
		if !slices.Contains(g.labels, l) {
			http.Error(w, "label \""+l+"\" is not a configured label", http.StatusBadRequest)
			return
		}
		if v < -2 || v > 2 {
			http.Error(w, "label \""+l+"\": "+strconv.Itoa(v)+" is not a valid value", http.StatusBadRequest)
			return
		}
		if v > 0 {
			head += " " + l + "+" + strconv.Itoa(v)
		} else if v < 0 {
			head += " " + l + strconv.Itoa(v)
		}
	}
	if in.Message == "" && len(in.Labels) == 0 {
		GerritJSON(w, map[string]any{})
		return
	}
	g.nextMsg++
	g.messages[number] = append(g.messages[number], GerritMessage{ID: fmt.Sprintf("%x", 0xc0ffee000+g.nextMsg), Tag: in.Tag,
		Author: GerritAccount{Name: "Criticizer", Username: "criticizer"}, Date: time.Now().UTC().Format("2006-01-02 15:04:05.000000000"),
		Message: head + "\n\n" + in.Message, RevisionNumber: ps, Labels: in.Labels, Notify: in.Notify})
	GerritJSON(w, map[string]any{"labels": in.Labels})
}

// URL is the server's root (config.Gerrit.APIURL).
func (g *GerritStandIn) URL() string { return g.srv.URL }

// Close stops it.
func (g *GerritStandIn) Close() { g.srv.Close() }

// Recorded sets the answers recorded from a real Gerrit: patch (a patch
// set's format-patch output) for every commit without a patch of its
// own, reviewers (a ReviewerInfo list, as JSON) for every change without
// reviewers of its own.
func (g *GerritStandIn) Recorded(patch, reviewers []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recordedPatch, g.recordedReviewers = patch, reviewers
}

// Commit records a commit: its first parent, its files (the parent's
// with add added) and, unless subject and diff are both empty, its patch
// (Patch).
func (g *GerritStandIn) Commit(sha, parent string, add map[string]string, subject, diff string) {
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
	if subject != "" || diff != "" {
		g.patches[sha] = formatPatch(sha, subject, diff)
	}
}

// Patch makes diff the patch of commit sha.
func (g *GerritStandIn) Patch(sha, subject, diff string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.patches[sha] = formatPatch(sha, subject, diff)
}

// formatPatch is diff as git format-patch writes it.
func formatPatch(sha, subject, diff string) []byte {
	return []byte("From " + sha + " Mon Sep 17 00:00:00 2001\nFrom: Administrator <admin@example.com>\n" +
		"Date: Mon, 20 Nov 2023 11:33:15 +0000\nSubject: [PATCH] " + subject + "\n\n---\n" + diff + "-- \n2.39.2\n\n")
}

// Branch points branch name at sha.
func (g *GerritStandIn) Branch(name, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.branches[name] = sha
}

// Change records an open change on branch whose patch set ps is commit
// sha, with its reviewers.
func (g *GerritStandIn) Change(number int, branch string, ps int, sha string, reviewers ...GerritAccount) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.changes[number]
	if c == nil {
		c = &gerritChange{branch: branch, patchSets: map[int]string{}}
		g.changes[number] = c
	}
	c.patchSets[ps] = sha
	g.reviewers[number] = append([]GerritAccount{}, reviewers...)
}

// Hashtags sets change number's hashtags (its owner may set them).
func (g *GerritStandIn) Hashtags(number int, tags ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.changes[number]; c != nil {
		c.hashtags = tags
	}
}

// includes reports whether branch's history holds commit.
func (g *GerritStandIn) includes(branch, commit string) bool {
	for c := g.branches[branch]; c != ""; c = g.parent[c] {
		if c == commit {
			return true
		}
	}
	return false
}

// GerritJSON writes v as Gerrit's REST API does: JSON behind the ")]}'"
// line that keeps a browser from running it.
func GerritJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write([]byte(")]}'\n"))
	_, _ = w.Write(b)
}

func (g *GerritStandIn) content(w http.ResponseWriter, sha, path string) {
	c, ok := g.files[sha][path]
	if !ok {
		http.Error(w, "Not found: "+path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
	_, _ = w.Write([]byte(base64.StdEncoding.EncodeToString([]byte(c))))
}

// ServeHTTP answers Gerrit's REST routes under /a/ (GerritStandIn).
func (g *GerritStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		if project != g.Project || c == nil {
			notFound()
			return
		}
		rest := seg[2:]
		switch {
		case len(rest) == 0:
			GerritJSON(w, map[string]any{"id": g.Project + "~" + c.branch + "~I" + num, "project": g.Project, "branch": c.branch,
				"hashtags": c.hashtags, "status": "NEW", "_number": n})
		case len(rest) == 2 && rest[0] == "reviewers" && rest[1] == "": // GET …/reviewers/
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			if len(g.reviewers[n]) == 0 && g.recordedReviewers != nil {
				_, _ = w.Write(g.recordedReviewers)
				break
			}
			_ = json.NewEncoder(w).Encode(g.reviewers[n])
		case len(rest) == 1 && rest[0] == "messages" && r.Method == http.MethodGet:
			msgs := g.messages[n]
			if msgs == nil {
				msgs = []GerritMessage{}
			}
			GerritJSON(w, msgs)
		case len(rest) >= 3 && rest[0] == "revisions":
			ps, sha, ok := c.revision(rest[1])
			switch {
			case !ok:
				notFound()
			case len(rest) == 3 && rest[2] == "review" && r.Method == http.MethodPost:
				g.review(w, r, n, ps)
			case len(rest) == 3 && rest[2] == "patch":
				patch, ok := g.patches[sha]
				if !ok {
					patch = g.recordedPatch
				}
				w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
				_, _ = w.Write([]byte(base64.StdEncoding.EncodeToString(patch)))
			case len(rest) == 3 && rest[2] == "commit":
				parents := []any{}
				if p := g.parent[sha]; p != "" {
					parents = append(parents, map[string]any{"commit": p, "subject": "parent"})
				}
				GerritJSON(w, map[string]any{"commit": sha, "parents": parents, "subject": "patch set"})
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
	case len(seg) >= 4 && seg[0] == "projects" && seg[1] == g.Project && seg[2] == "branches":
		sha, ok := g.branches[strings.TrimPrefix(seg[3], "refs/heads/")]
		if !ok || len(seg) != 4 {
			notFound()
			return
		}
		GerritJSON(w, map[string]any{"ref": "refs/heads/" + strings.TrimPrefix(seg[3], "refs/heads/"), "revision": sha})
	case len(seg) == 5 && seg[0] == "projects" && seg[1] == g.Project && seg[2] == "commits" && seg[4] == "in":
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
		GerritJSON(w, map[string]any{"branches": branches, "tags": []string{}})
	case len(seg) == 7 && seg[0] == "projects" && seg[1] == g.Project && seg[2] == "commits" && seg[4] == "files" && seg[6] == "content":
		if _, ok := g.files[seg[3]]; !ok {
			notFound()
			return
		}
		g.content(w, seg[3], seg[5])
	default:
		notFound()
	}
}

// GerritPatchsetCreated is a patchset-created event as Gerrit's webhooks
// plugin sends it: patch set ps of change number on branch, commit
// revision on parent, owned and uploaded by owner.
func GerritPatchsetCreated(project, branch string, number, ps int, revision, parent string, owner GerritAccount, subject string) []byte {
	m := map[string]any{"type": "patchset-created", "uploader": owner,
		"patchSet": map[string]any{"number": ps, "revision": revision, "parents": []string{parent},
			"ref":      "refs/changes/" + strconv.Itoa(number%100) + "/" + strconv.Itoa(number) + "/" + strconv.Itoa(ps),
			"uploader": owner, "author": owner, "kind": "REWORK", "createdOn": 1700479995},
		"change": map[string]any{"project": project, "branch": branch, "id": "I" + revision, "number": number, "subject": subject,
			"owner": owner, "url": "https://review.example.com/c/" + project + "/+/" + strconv.Itoa(number),
			"commitMessage": subject + "\n\nChange-Id: I" + revision + "\n", "createdOn": 1700478731, "status": "NEW"},
		"project": map[string]any{"name": project}, "refName": "refs/heads/" + branch,
		"changeKey": map[string]any{"key": "I" + revision}, "eventCreatedOn": 1700479996}
	b, _ := json.Marshal(m)
	return b
}
