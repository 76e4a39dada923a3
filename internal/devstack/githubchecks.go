package devstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// GitHubCheckRun is a check run as the Checks API holds it, with every
// annotation it was given.
type GitHubCheckRun struct {
	ID          int64                `json:"id"`
	Name        string               `json:"name"`
	HeadSHA     string               `json:"head_sha"`
	ExternalID  string               `json:"external_id"`
	Status      string               `json:"status"`
	Conclusion  *string              `json:"conclusion"`
	DetailsURL  string               `json:"details_url"`
	StartedAt   string               `json:"started_at"`
	CompletedAt *string              `json:"completed_at"`
	Title       string               `json:"-"`
	Summary     string               `json:"-"`
	Annotations []GitHubAnnotation   `json:"-"`
	Output      githubCheckRunOutput `json:"output"`
}

type githubCheckRunOutput struct {
	Title            *string `json:"title"`
	Summary          *string `json:"summary"`
	AnnotationsCount int     `json:"annotations_count"`
}

// GitHubAnnotation is one check run annotation.
type GitHubAnnotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
}

// GitHubStatus is a commit status.
type GitHubStatus struct {
	ID          int64  `json:"id"`
	SHA         string `json:"-"`
	State       string `json:"state"`
	Context     string `json:"context"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
}

// GitHubChecks is GitHub's Checks API and commit statuses for one
// repository, answered as GitHub's REST reference shows them: POST
// /repos/{repo}/check-runs, PATCH and GET /repos/{repo}/check-runs/{id},
// GET /repos/{repo}/commits/{ref}/check-runs (check_name, filter,
// per_page, page), POST /repos/{repo}/statuses/{sha} and GET
// /repos/{repo}/commits/{ref}/statuses (newest first). It validates as
// GitHub does (422 for a missing name or head_sha, a completed run
// without a conclusion, more than 50 annotations in one request, a
// summary over 65535 characters, an unknown state or a description over
// 140; 404 for a check run it does not hold) and appends each update's
// annotations. It keeps everything so a test reads what a reader of the
// pull request would see (CheckRuns, Statuses).
type GitHubChecks struct {
	Repo string
	// Known, if set, says whether a commit exists: a check run or
	// status on another is 422 ("No commit found for SHA").
	Known func(sha string) bool

	mu       sync.Mutex
	next     int64
	tokens   map[string]bool // installation tokens minted
	runs     []*GitHubCheckRun
	statuses []GitHubStatus
}

// CheckRuns are the check runs on head (every commit's when empty), in
// creation order, as copies.
func (g *GitHubChecks) CheckRuns(head string) []GitHubCheckRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []GitHubCheckRun
	for _, r := range g.runs {
		if head == "" || r.HeadSHA == head {
			c := *r
			c.Annotations = slices.Clone(r.Annotations)
			out = append(out, c)
		}
	}
	return out
}

// Statuses are the commit statuses on sha (every commit's when empty),
// oldest first.
func (g *GitHubChecks) Statuses(sha string) []GitHubStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []GitHubStatus
	for _, s := range g.statuses {
		if sha == "" || s.SHA == sha {
			out = append(out, s)
		}
	}
	return out
}

func githubError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest/checks/runs", "status": strconv.Itoa(status)})
	_, _ = w.Write(b)
}

func githubJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve answers r when it is one of the checks' or statuses' routes;
// false leaves it to the caller.
func (g *GitHubChecks) Serve(w http.ResponseWriter, r *http.Request) bool {
	if g.serveApp(w, r) {
		return true
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/repos/"+g.Repo+"/")
	if !ok {
		return false
	}
	seg := strings.Split(rest, "/")
	for i, s := range seg {
		seg[i], _ = url.PathUnescape(s)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(seg) > 0 && seg[0] == "check-runs" && !g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
		// Only a GitHub App's installation may write or read check runs
		// through this route: a personal or OAuth token is refused.
		githubError(w, http.StatusForbidden, "Resource not accessible by personal access token")
		return true
	}
	switch {
	case r.Method == http.MethodPost && len(seg) == 1 && seg[0] == "check-runs":
		g.createRun(w, r)
	case len(seg) == 2 && seg[0] == "check-runs" && (r.Method == http.MethodPatch || r.Method == http.MethodGet):
		id, _ := strconv.ParseInt(seg[1], 10, 64)
		i := slices.IndexFunc(g.runs, func(c *GitHubCheckRun) bool { return c.ID == id })
		if i < 0 {
			githubError(w, http.StatusNotFound, "Not Found")
			return true
		}
		if r.Method == http.MethodGet {
			githubJSON(w, http.StatusOK, g.runs[i])
			return true
		}
		g.updateRun(w, r, g.runs[i])
	case r.Method == http.MethodGet && len(seg) == 3 && seg[0] == "commits" && seg[2] == "check-runs":
		g.listRuns(w, r, seg[1])
	case r.Method == http.MethodPost && len(seg) == 2 && seg[0] == "statuses":
		g.createStatus(w, r, seg[1])
	case r.Method == http.MethodGet && len(seg) == 3 && seg[0] == "commits" && seg[2] == "statuses":
		g.listStatuses(w, r, seg[1])
	default:
		return false
	}
	return true
}

// checkRunInput is the body of a create or an update.
type checkRunInput struct {
	Name        *string `json:"name"`
	HeadSHA     *string `json:"head_sha"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	DetailsURL  *string `json:"details_url"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *struct {
		Title       *string            `json:"title"`
		Summary     *string            `json:"summary"`
		Annotations []GitHubAnnotation `json:"annotations"`
	} `json:"output"`
}

var (
	checkStatuses    = []string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}
	annotationLevels = []string{"notice", "warning", "failure"}
)

// validate checks an input as GitHub does; "" when it is valid.
func (in checkRunInput) validate(create bool, current string) string {
	status := current
	if in.Status != nil {
		status = *in.Status
		if !slices.Contains(checkStatuses, status) {
			return "Invalid request.\n\nstatus is not included in the list"
		}
	}
	if in.Conclusion != nil {
		if !slices.Contains(checkConclusions, *in.Conclusion) {
			return "Invalid request.\n\nconclusion is not included in the list"
		}
	} else if status == "completed" && current != "completed" {
		return "Invalid request.\n\n\"conclusion\" wasn't supplied."
	}
	if create && (in.Name == nil || *in.Name == "") {
		return "Invalid request.\n\n\"name\" wasn't supplied."
	}
	if create && (in.HeadSHA == nil || *in.HeadSHA == "") {
		return "Invalid request.\n\n\"head_sha\" wasn't supplied."
	}
	if o := in.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			return "Invalid request.\n\n\"title\", \"summary\" weren't supplied."
		}
		if utf8.RuneCountInString(*o.Summary) > 65535 {
			return "Invalid request.\n\nOnly 65535 characters are allowed; 'summary' is too long."
		}
		if len(o.Annotations) > 50 {
			return "Invalid request.\n\nOnly 50 annotations are allowed per request."
		}
		for _, a := range o.Annotations {
			if a.Path == "" || a.StartLine < 1 || a.EndLine < a.StartLine || a.Message == "" ||
				!slices.Contains(annotationLevels, a.AnnotationLevel) || len(a.Message) > 64<<10 || utf8.RuneCountInString(a.Title) > 255 {
				return "Invalid request.\n\nAn annotation is invalid (path, start_line, end_line, annotation_level, message)."
			}
		}
	}
	return ""
}

func (g *GitHubChecks) createRun(w http.ResponseWriter, r *http.Request) {
	var in checkRunInput
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		githubError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if msg := in.validate(true, "queued"); msg != "" {
		githubError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if g.Known != nil && !g.Known(*in.HeadSHA) {
		githubError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+*in.HeadSHA)
		return
	}
	g.next++
	c := &GitHubCheckRun{ID: g.next, Name: *in.Name, HeadSHA: *in.HeadSHA, Status: "queued",
		StartedAt: time.Now().UTC().Format(time.RFC3339)}
	g.apply(c, in)
	g.runs = append(g.runs, c)
	githubJSON(w, http.StatusCreated, c)
}

func (g *GitHubChecks) updateRun(w http.ResponseWriter, r *http.Request, c *GitHubCheckRun) {
	var in checkRunInput
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		githubError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if msg := in.validate(false, c.Status); msg != "" {
		githubError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	g.apply(c, in)
	githubJSON(w, http.StatusOK, c)
}

// apply sets what in gives; annotations are appended, as GitHub does.
func (g *GitHubChecks) apply(c *GitHubCheckRun, in checkRunInput) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.ExternalID, in.ExternalID)
	set(&c.Status, in.Status)
	set(&c.DetailsURL, in.DetailsURL)
	set(&c.StartedAt, in.StartedAt)
	if in.Conclusion != nil {
		v := *in.Conclusion
		c.Conclusion, c.Status = &v, "completed" // a conclusion completes the run
	}
	if c.Status == "completed" && c.CompletedAt == nil {
		v := time.Now().UTC().Format(time.RFC3339)
		if in.CompletedAt != nil {
			v = *in.CompletedAt
		}
		c.CompletedAt = &v
	}
	if o := in.Output; o != nil {
		c.Title, c.Summary = *o.Title, *o.Summary
		c.Annotations = append(c.Annotations, o.Annotations...)
	}
	t, s := c.Title, c.Summary
	c.Output = githubCheckRunOutput{Title: &t, Summary: &s, AnnotationsCount: len(c.Annotations)}
}

// page returns items' page of per_page (default 30, at most 100).
func page[T any](r *http.Request, items []T) []T {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	p, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p = max(p, 1)
	lo := min((p-1)*per, len(items))
	return items[lo:min(lo+per, len(items))]
}

func (g *GitHubChecks) listRuns(w http.ResponseWriter, r *http.Request, ref string) {
	name := r.URL.Query().Get("check_name")
	var all []*GitHubCheckRun
	for _, c := range g.runs {
		if c.HeadSHA == ref && (name == "" || c.Name == name) {
			all = append(all, c)
		}
	}
	if r.URL.Query().Get("filter") != "all" {
		// latest: the newest run of each name.
		latest := map[string]*GitHubCheckRun{}
		for _, c := range all {
			latest[c.Name] = c
		}
		all = all[:0]
		for _, c := range g.runs {
			if latest[c.Name] == c {
				all = append(all, c)
			}
		}
	}
	slices.Reverse(all) // newest first
	githubJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "check_runs": page(r, all)})
}

func (g *GitHubChecks) createStatus(w http.ResponseWriter, r *http.Request, sha string) {
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		githubError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	switch {
	case !slices.Contains([]string{"error", "failure", "pending", "success"}, in.State):
		githubError(w, http.StatusUnprocessableEntity, "Validation Failed: state is not included in the list")
		return
	case utf8.RuneCountInString(in.Description) > 140:
		githubError(w, http.StatusUnprocessableEntity, "Validation Failed: description is too long (maximum is 140 characters)")
		return
	case g.Known != nil && !g.Known(sha):
		githubError(w, http.StatusUnprocessableEntity, fmt.Sprintf("No commit found for SHA: %s", sha))
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	g.next++
	s := GitHubStatus{ID: g.next, SHA: sha, State: in.State, Context: in.Context, TargetURL: in.TargetURL,
		Description: in.Description, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	g.statuses = append(g.statuses, s)
	githubJSON(w, http.StatusCreated, s)
}

func (g *GitHubChecks) listStatuses(w http.ResponseWriter, r *http.Request, ref string) {
	var out []GitHubStatus
	for i := len(g.statuses) - 1; i >= 0; i-- {
		if g.statuses[i].SHA == ref {
			out = append(out, g.statuses[i])
		}
	}
	if out == nil {
		out = []GitHubStatus{}
	}
	githubJSON(w, http.StatusOK, page(r, out))
}

// serveApp answers a GitHub App's own routes: the installation of the
// repository (GET /repos/{repo}/installation: id 1) and an installation
// token (POST /app/installations/{id}/access_tokens, given an App's JWT
// as its bearer), which the check runs' routes then accept.
func (g *GitHubChecks) serveApp(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodGet && p == "/repos/"+g.Repo+"/installation":
		githubJSON(w, http.StatusOK, map[string]any{"id": 1, "app_id": 1})
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/app/installations/") && strings.HasSuffix(p, "/access_tokens"):
		if strings.Count(r.Header.Get("Authorization"), ".") != 2 {
			githubError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return true
		}
		g.mu.Lock()
		g.next++
		tok := fmt.Sprintf("ghs_standin%06d", g.next)
		if g.tokens == nil {
			g.tokens = map[string]bool{}
		}
		g.tokens[tok] = true
		g.mu.Unlock()
		githubJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	default:
		return false
	}
	return true
}
