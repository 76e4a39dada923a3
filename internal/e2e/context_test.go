package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// githubContents serves GitHub's contents API for Codertocat/Hello-World
// as its REST documentation shows it: GET
// /repos/{owner}/{repo}/contents/{path}?ref={sha}, the file at that
// commit ("" is the default branch's tip, read without ref); raw with
// Accept: application/vnd.github.raw+json, else the JSON object with the
// content in base64 (lines of 60 characters, as GitHub wraps them). A
// path the commit lacks is 404.
func (f *fakeReviewAPI) githubContents(files map[string]map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const prefix = "GET /repos/Codertocat/Hello-World/contents/"
	f.prefixes[prefix] = func(w http.ResponseWriter, r *http.Request) {
		p, err := url.PathUnescape(strings.TrimPrefix(r.Method+" "+r.URL.EscapedPath(), prefix))
		content, ok := files[r.URL.Query().Get("ref")][p]
		if err != nil || !ok {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest/repos/contents#get-repository-content","status":"404"}`))
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "application/vnd.github.raw") {
			w.Header().Set("Content-Type", "application/vnd.github.raw+json; charset=utf-8")
			w.Write([]byte(content))
			return
		}
		enc := base64.StdEncoding.EncodeToString([]byte(content))
		var wrapped strings.Builder
		for len(enc) > 60 {
			wrapped.WriteString(enc[:60] + "\n")
			enc = enc[60:]
		}
		wrapped.WriteString(enc + "\n")
		b, _ := json.Marshal(map[string]any{"type": "file", "encoding": "base64", "size": len(content), "name": p[strings.LastIndex(p, "/")+1:],
			"path": p, "content": wrapped.String()})
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(b)
	}
}

// priceFile is svc/price.go: a function of 36 lines whose line 30 the
// change edits; mainLine is a line outside the hunk that the default
// branch has changed since.
func priceFile(changed, mainMoved bool) string {
	lines := []string{"package svc", "", `import "context"`, "", "// Price prices an order.", "func Price(ctx context.Context, o Order) (int64, error) {",
		"\ttotal := int64(0)"}
	for n := 8; n <= 38; n++ {
		l := fmt.Sprintf("\ttotal += o.Line(%d)", n)
		if n == 30 && changed {
			l += " * 2"
		}
		if n == 12 && mainMoved {
			l += " // the default branch moved on"
		}
		lines = append(lines, l)
	}
	lines = append(lines, "\treturn total, nil", "}", "", "func Other() {}")
	return strings.Join(lines, "\n") + "\n"
}

// TestGitHubContext_PromptHoldsTheEnclosingFunctionReadAtTheHead: a
// pull request changes one line deep in a function. The fetch stage reads
// the file through GitHub's contents API at the head commit the event
// named — not the base, not the default branch, which has moved on — and
// the model's prompt holds that function's lines outside the hunk,
// numbered, as context it may not cite; a second file the API does not
// serve (404) is reviewed from its hunks alone, and the review goes on.
// Rules: R-CONTEXT-1, R-CONTEXT-2.
func TestGitHubContext_PromptHoldsTheEnclosingFunctionReadAtTheHead(t *testing.T) {
	t.Parallel()
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	domain := testenv.Prefix(t) + ".example.com"
	octocat := "octocat@" + domain
	head := priceFile(true, false)
	d := priceDiff() + "diff --git a/svc/gone.go b/svc/gone.go\nnew file mode 100644\n--- /dev/null\n+++ b/svc/gone.go\n@@ -0,0 +1,2 @@\n+package svc\n+var gone = 1\n"
	gh := newFakeReviewAPI(t)
	gh.githubDiff([]byte(d))
	gh.githubContents(map[string]map[string]string{
		newHeadSHA: {"svc/price.go": head},
		ghBaseSHA:  {"svc/price.go": priceFile(false, false)},
		"":         {"svc/price.go": priceFile(true, true)}, // the default branch's tip
	})
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
	})
	resp, b := s.postGitHub("pull_request", "context-sync-1", githubPayloadAt(t, "pull_request.synchronize.json", newHeadSHA, ghBaseSHA), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	id := decodeAccepted(t, b).JobID
	s.waitJob(id, 60*time.Second, job.StatusSucceeded)

	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	user := reqs[0].User
	checkPriceContext(t, user)
	if !strings.Contains(user, "    30 +  \ttotal += o.Line(30) * 2\n") || !strings.Contains(user, "File: svc/gone.go (new file)") ||
		strings.Contains(user, "Context of svc/gone.go") {
		t.Errorf("the hunks are not sent as before, or the unread file has context:\n%s", user)
	}
	reads := 0
	for _, r := range gh.requests() {
		if !strings.Contains(r.URL.Path, "/contents/svc/") {
			continue
		}
		reads++
		if r.URL.Query().Get("ref") != newHeadSHA || r.Header.Get("Accept") != "application/vnd.github.raw+json" {
			t.Errorf("read %s (Accept %q): not the event's head commit, raw", r.URL, r.Header.Get("Accept"))
		}
	}
	if reads != 2 {
		t.Errorf("%d reads of changed files, want 2 (price.go, gone.go)", reads)
	}
	j, err := s.fns.Jobs.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		t.Fatal(err)
	}
	if j.ContextRef == "" || !strings.HasPrefix(j.ContextRef, "diffs/context/") || c.Context == nil || c.Context.Files != 1 {
		t.Errorf("job's context %q, critique's %+v; want the object under diffs/context/ and one file shown", j.ContextRef, c.Context)
	}
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 1 {
		t.Errorf("%d emails to the reviewer, want 1", n)
	}
}

// priceDiff is the change to svc/price.go: line 30, deep in Price.
func priceDiff() string {
	var d strings.Builder
	d.WriteString("diff --git a/svc/price.go b/svc/price.go\nindex 1111111..2222222 100644\n--- a/svc/price.go\n+++ b/svc/price.go\n" + priceHunk())
	return d.String()
}

// priceHunk is priceDiff's hunk.
func priceHunk() string {
	var d strings.Builder
	d.WriteString("@@ -27,7 +27,7 @@ func Price(ctx context.Context, o Order) (int64, error) {\n")
	for n := 27; n <= 33; n++ {
		if n == 30 {
			d.WriteString("-\ttotal += o.Line(30)\n+\ttotal += o.Line(30) * 2\n")
			continue
		}
		fmt.Fprintf(&d, " \ttotal += o.Line(%d)\n", n)
	}
	return d.String()
}

// checkPriceContext asserts that the model's prompt holds Price's lines
// outside the hunk as the head has them, numbered as context, and the
// hunk as before.
func checkPriceContext(t *testing.T, user string) {
	t.Helper()
	i := strings.Index(user, "Context of svc/price.go at the version's head (read only, cite none of these lines):\n")
	if i < 0 {
		t.Fatalf("the prompt holds no context for svc/price.go:\n%s", user)
	}
	ctx := user[i:]
	if end := strings.Index(ctx, "\n\n"); end > 0 {
		ctx = ctx[:end]
	}
	for _, want := range []string{
		"     6 |  func Price(ctx context.Context, o Order) (int64, error) {\n",
		"    12 |  \ttotal += o.Line(12)\n", // the head's line, not the default branch's
		"    26 |  \ttotal += o.Line(26)\n",
		"    34 |  \ttotal += o.Line(34)\n",
		"    40 |  }",
	} {
		if !strings.Contains(ctx, want) {
			t.Errorf("the context lacks %q:\n%s", want, ctx)
		}
	}
	for _, not := range []string{"default branch moved on", "    30 |", "func Other"} {
		if strings.Contains(ctx, not) {
			t.Errorf("the context holds %q:\n%s", not, ctx)
		}
	}
	if !strings.Contains(user, "    30 +  \ttotal += o.Line(30) * 2\n") {
		t.Errorf("the hunk is not sent as before:\n%s", user)
	}
}

// gitlabFiles serves GitLab's repository files API for a project (its
// escaped API path) as its REST documentation shows it: GET
// /projects/:id/repository/files/:file_path/raw?ref={sha}, the path
// URL-encoded whole, the file's bytes; a path the commit lacks is 404.
func (f *fakeReviewAPI) gitlabFiles(project string, files map[string]map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := "GET " + project + "/repository/files/"
	f.prefixes[prefix] = func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.Method+" "+r.URL.EscapedPath(), prefix)
		escaped, raw := strings.CutSuffix(rest, "/raw")
		p, err := url.PathUnescape(escaped)
		content, ok := files[r.URL.Query().Get("ref")][p]
		if err != nil || !raw || !ok || strings.Contains(escaped, "/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"404 File Not Found"}`))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(content))
	}
}

// TestGitLabAndGerritContext_PromptHoldsTheEnclosingFunctionReadAtTheHead:
// the same one-line change on GitLab (the repository files API at the
// merge request version's head commit, never its base) and on Gerrit (the
// file content of the patch set whose patch was read, never a commit of
// the branch): the model's prompt holds the function around the hunk.
// Rules: R-CONTEXT-1.
func TestGitLabAndGerritContext_PromptHoldsTheEnclosingFunctionReadAtTheHead(t *testing.T) {
	t.Parallel()
	openAI := func(model *critictest.StandIn) func(*config.Config) {
		return func(c *config.Config) {
			c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
		}
	}
	t.Run("gitlab", func(t *testing.T) {
		t.Parallel()
		const (
			hookHead = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7" // merge_request.open.json's last_commit
			base     = "ae73cb07c9eeaf35924a10f713b364d32b2dd34f"
		)
		model := critictest.NewStandIn()
		t.Cleanup(model.Close)
		user1 := "user1@" + testenv.Prefix(t) + ".example.com"
		gl := newFakeReviewAPI(t)
		project := "/api/v4/projects/gitlabhq%2Fgitlab-test"
		mr := project + "/merge_requests/1"
		versions, _ := json.Marshal([]map[string]any{{"id": 300, "head_commit_sha": hookHead, "base_commit_sha": base, "start_commit_sha": base}})
		version, _ := json.Marshal(map[string]any{"id": 300, "head_commit_sha": hookHead, "base_commit_sha": base, "start_commit_sha": base,
			"state": "collected", "commits": []any{}, "diffs": []any{map[string]any{"old_path": "svc/price.go", "new_path": "svc/price.go",
				"a_mode": "100644", "b_mode": "100644", "new_file": false, "renamed_file": false, "deleted_file": false, "diff": priceHunk()}}})
		gl.on("GET "+mr+"/versions", "application/json", versions)
		gl.on("GET "+mr+"/versions/300", "application/json", version)
		gl.on("GET "+mr+"/reviewers", "application/json", readFile(t, sourceData+"gitlab/reviewers.json"))
		gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
		gl.gitlabFiles(project, map[string]map[string]string{
			hookHead: {"svc/price.go": priceFile(true, false)},
			base:     {"svc/price.go": priceFile(false, true)},
		})
		s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
			c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
			c.ReviewerDirectory = `{"gitlab": {"user1": "` + user1 + `"}}`
		}, openAI(model))
		resp, b := s.postHook("/webhooks/gitlab", map[string]string{webhook.GitLabTokenHeader: glToken,
			webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: "context-open-1"},
			readFile(t, webhookData+"gitlab/merge_request.open.json"))
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("open: %d %s", resp.StatusCode, b)
		}
		s.waitJob(decodeAccepted(t, b).JobID, 60*time.Second, job.StatusSucceeded)
		if reqs := model.Requests(); len(reqs) != 1 {
			t.Fatalf("%d model requests, want 1", len(reqs))
		} else {
			checkPriceContext(t, reqs[0].User)
		}
		for _, r := range gl.requests() {
			if strings.Contains(r.URL.EscapedPath(), "/repository/files/svc%2Fprice.go") && r.URL.Query().Get("ref") != hookHead {
				t.Errorf("read %s: not the version's head", r.URL)
			}
		}
	})
	t.Run("gerrit", func(t *testing.T) {
		t.Parallel()
		model := critictest.NewStandIn()
		t.Cleanup(model.Close)
		domain := testenv.Prefix(t) + ".example.com"
		gr, repo := gerritStandIn(t, domain)
		repo.Commit(gerritParent, gerritTip, map[string]string{"svc/price.go": priceFile(false, false)}, "", "")
		repo.Commit(gerritHead, gerritParent, map[string]string{"svc/price.go": priceFile(true, false)}, "", "")
		repo.Commit(gerritTip, "", map[string]string{"svc/price.go": priceFile(true, true)}, "", "") // the branch, moved on
		repo.Patch(gerritHead, "double line 30", priceDiff())
		s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
			c.Gerrit = config.Gerrit{WebhookToken: gerritToken, APIURL: gr.srv.URL, Username: "criticizer", Password: "http-password"}
		}, openAI(model))
		id := s.postGerrit(readFile(t, webhookData+"gerrit/patchset-created.json"))
		s.waitJob(id, 60*time.Second, job.StatusSucceeded)
		if reqs := model.Requests(); len(reqs) != 1 {
			t.Fatalf("%d model requests, want 1", len(reqs))
		} else {
			checkPriceContext(t, reqs[0].User)
		}
		reads := 0
		for _, r := range gr.requests() {
			if strings.Contains(r.URL.EscapedPath(), "svc%2Fprice.go") {
				reads++
				if r.URL.EscapedPath() != "/a/changes/TestRepo1~2/revisions/2/files/svc%2Fprice.go/content" || r.URL.Query().Has("parent") {
					t.Errorf("read %s: not the patch set's file", r.URL)
				}
			}
		}
		if reads != 1 {
			t.Errorf("%d reads of svc/price.go, want 1", reads)
		}
	})
}
