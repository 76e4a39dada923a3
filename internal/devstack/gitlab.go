package devstack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// GitLabCommitStatus is a commit status as GitLab's API shows it.
type GitLabCommitStatus struct {
	ID          int64  `json:"id"`
	SHA         string `json:"sha"`
	Ref         string `json:"ref"`
	Status      string `json:"status"`
	Name        string `json:"name"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
	AllowFail   bool   `json:"allow_failure"`
}

// GitLabStatuses is GitLab's commit status API for one project, as its
// REST reference shows it: POST /projects/:id/statuses/:sha (state,
// name, target_url, description) and GET
// /projects/:id/repository/commits/:sha/statuses (name, all, per_page,
// page). :id is the project's path URL-encoded, or its numeric id. A
// status of a name that is pending or running moves to the new state in
// place (its id kept); one that is finished is followed by a new one. A
// status posted in the state it already has is refused with 400
// ("Cannot transition status via :run from :running"), as GitLab
// answers; an unknown state is 400 too. It keeps every status so a test
// reads them (Statuses).
type GitLabStatuses struct {
	Project string
	// ID is the project's numeric id, which names it as well.
	ID string

	mu       sync.Mutex
	next     int64
	statuses []*GitLabCommitStatus
}

// Statuses are the statuses on sha (every commit's when empty), oldest
// first, as copies.
func (g *GitLabStatuses) Statuses(sha string) []GitLabCommitStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []GitLabCommitStatus
	for _, s := range g.statuses {
		if sha == "" || s.SHA == sha {
			out = append(out, *s)
		}
	}
	return out
}

func gitlabJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var gitlabStates = []string{"pending", "running", "success", "failed", "canceled", "skipped"}

// transitions are GitLab's event names for moving to a state, as its
// refusal quotes them.
var transitions = map[string]string{"pending": "enqueue", "running": "run", "success": "success", "failed": "drop",
	"canceled": "cancel", "skipped": "skip"}

// Serve answers r when it is one of the statuses' routes (under
// /api/v4 or not); false leaves it to the caller.
func (g *GitLabStatuses) Serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4")
	rest, ok := strings.CutPrefix(p, "/projects/")
	if !ok {
		return false
	}
	id, rest, _ := strings.Cut(rest, "/")
	if id, _ = url.PathUnescape(id); id != g.Project && (g.ID == "" || id != g.ID) {
		return false
	}
	seg := strings.Split(rest, "/")
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && len(seg) == 2 && seg[0] == "statuses":
		g.create(w, r, seg[1])
	case r.Method == http.MethodGet && len(seg) == 4 && seg[0] == "repository" && seg[1] == "commits" && seg[3] == "statuses":
		g.list(w, r, seg[2])
	default:
		return false
	}
	return true
}

func (g *GitLabStatuses) create(w http.ResponseWriter, r *http.Request, sha string) {
	var in struct {
		State       string `json:"state"`
		Name        string `json:"name"`
		Context     string `json:"context"`
		Ref         string `json:"ref"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		gitlabJSON(w, http.StatusBadRequest, map[string]any{"error": "400 Bad request - malformed JSON"})
		return
	}
	if !slices.Contains(gitlabStates, in.State) {
		gitlabJSON(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	if utf8.RuneCountInString(in.Description) > 255 {
		gitlabJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"description": []string{"is too long (maximum is 255 characters)"}}})
		return
	}
	name := in.Name
	if name == "" {
		name = in.Context
	}
	if name == "" {
		name = "default"
	}
	var last *GitLabCommitStatus
	for _, s := range g.statuses {
		if s.SHA == sha && s.Name == name {
			last = s
		}
	}
	switch {
	case last != nil && last.Status == in.State:
		gitlabJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot transition status via :" + transitions[in.State] +
			" from :" + last.Status + " (Reason(s): Status cannot transition via \"" + transitions[in.State] + "\".)"})
		return
	case last != nil && (last.Status == "pending" || last.Status == "running"):
		last.Status, last.TargetURL, last.Description = in.State, in.TargetURL, in.Description
		gitlabJSON(w, http.StatusCreated, last)
		return
	}
	g.next++
	s := &GitLabCommitStatus{ID: g.next, SHA: sha, Ref: in.Ref, Status: in.State, Name: name, TargetURL: in.TargetURL,
		Description: in.Description, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	g.statuses = append(g.statuses, s)
	gitlabJSON(w, http.StatusCreated, s)
}

func (g *GitLabStatuses) list(w http.ResponseWriter, r *http.Request, sha string) {
	q := r.URL.Query()
	out := []GitLabCommitStatus{}
	latest := map[string]int64{}
	for _, s := range g.statuses {
		if s.SHA == sha {
			latest[s.Name] = s.ID
		}
	}
	for _, s := range g.statuses {
		if s.SHA != sha || (q.Get("name") != "" && s.Name != q.Get("name")) || (q.Get("all") != "true" && latest[s.Name] != s.ID) {
			continue
		}
		out = append(out, *s)
	}
	per := page(r, out)
	if per == nil {
		per = []GitLabCommitStatus{}
	}
	gitlabJSON(w, http.StatusOK, per)
}

// GitLabStandIn is a GitLab project's commit status API on a server of
// its own (GitLabStatuses), its answers lost after the work on demand
// (Loss). Its URL is the API root (config.GitLab.APIURL, …/api/v4).
type GitLabStandIn struct {
	*GitLabStatuses
	Loss AnswerLoss
	srv  *httptest.Server
}

// NewGitLabStandIn starts a stand-in for project (its path with
// namespace).
func NewGitLabStandIn(project string) *GitLabStandIn {
	g := &GitLabStandIn{GitLabStatuses: &GitLabStatuses{Project: project}}
	g.srv = httptest.NewServer(g.Loss.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Serve(w, r) {
			gitlabJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not Found"})
		}
	})))
	return g
}

// URL is the API root.
func (g *GitLabStandIn) URL() string { return g.srv.URL + "/api/v4" }

// Close stops it.
func (g *GitLabStandIn) Close() { g.srv.Close() }
