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
	var d strings.Builder
	d.WriteString("diff --git a/svc/price.go b/svc/price.go\nindex 1111111..2222222 100644\n--- a/svc/price.go\n+++ b/svc/price.go\n@@ -27,7 +27,7 @@ func Price(ctx context.Context, o Order) (int64, error) {\n")
	for n := 27; n <= 33; n++ {
		if n == 30 {
			d.WriteString("-\ttotal += o.Line(30)\n+\ttotal += o.Line(30) * 2\n")
			continue
		}
		fmt.Fprintf(&d, " \ttotal += o.Line(%d)\n", n)
	}
	d.WriteString("diff --git a/svc/gone.go b/svc/gone.go\nnew file mode 100644\n--- /dev/null\n+++ b/svc/gone.go\n@@ -0,0 +1,2 @@\n+package svc\n+var gone = 1\n")
	gh := newFakeReviewAPI(t)
	gh.githubDiff([]byte(d.String()))
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
