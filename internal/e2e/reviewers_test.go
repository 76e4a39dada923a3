package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// These tests follow reviewers across a review, per source, driven by the
// published example payloads (GitHub: @octokit/webhooks-examples; GitLab
// and Gerrit: their documented shapes, internal/webhook/testdata), with
// local stand-ins of the REST routes the fetch stage reads, on the local
// stack. What they count is what a reviewer sees: emails in the SES store.

// editJSON decodes a payload, applies edit and encodes it again.
func editJSON(t *testing.T, b []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// settledRow waits until a delivery row exists and is settled (sent,
// delivered or skipped), and returns it.
func (s *stack) settledRow(id string) delivery.Row {
	s.t.Helper()
	var r delivery.Row
	eventually(s.t, 30*time.Second, "delivery row "+id+" settled", func() bool {
		var err error
		r, err = s.fns.Deliveries.Get(context.Background(), id)
		if errors.Is(err, store.ErrNotFound) {
			return false
		}
		if err != nil {
			s.t.Fatal(err)
		}
		return r.Status.Done()
	})
	return r
}

// settled waits for a job to be succeeded with every recipient's row
// settled, then a moment more, so a second email would have had time to
// arrive.
func (s *stack) settled(id job.ID, rows ...string) {
	s.t.Helper()
	for _, r := range rows {
		s.settledRow(r)
	}
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	time.Sleep(1500 * time.Millisecond)
}

// request sends an HTTP request to the stack's API.
func (s *stack) request(method, path string, headers map[string]string, body []byte) (int, []byte) {
	s.t.Helper()
	resp, b := s.send(method, path, headers, body)
	return resp.StatusCode, b
}

// count is how many emails each of the addresses has, in order.
func (s *stack) count(addrs ...string) []int {
	s.t.Helper()
	out := make([]int, len(addrs))
	for i, a := range addrs {
		out[i] = len(emailsTo(s.t, s.env.SES, a))
	}
	return out
}

func (s *stack) expectEmails(when string, addrs []string, want ...int) {
	s.t.Helper()
	if got := s.count(addrs...); !slices.Equal(got, want) {
		s.t.Fatalf("%s: emails to %v = %v, want %v", when, addrs, got, want)
	}
}

// GitHub, end to end: a pull request is opened with one requested
// reviewer, who gets the critique. A second reviewer is requested
// (review_requested) whom no directory entry knows: their row is
// skipped_no_email, the job view lists them (masked for the status link;
// whole in the admin API's unknown list), UnknownReviewers counts them and the
// directory's unknown list names them; nobody is mailed again. An operator
// adds them with the CLI and another entry with the admin API; a team is
// requested: the team's member and the reviewer the CLI added get this
// version's critique, once (a redelivery sends nothing), without a new
// model run. One reviewer submits a review (pull_request_review) and is no
// longer requested; another is removed (review_request_removed). The next
// push (version 2) is mailed to the team's member and to the one who
// reviewed, not to the removed one, nor to the author, who reviewed their
// own pull request.
// Rules: R-REVIEWERS-1, R-REVIEWERS-2, R-REVIEWERS-3, R-REVIEWERS-4.
func TestGitHubReviewers_LateRequestedReviewedRemoved_DirectoryByCLI(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat, hubot, wonder := "octocat@"+domain, "hubot@"+domain, "wonderwoman@"+domain
	everyone := []string{octocat, hubot, wonder}
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	requested := func(users []string, teams ...string) {
		var body struct {
			Users []map[string]string `json:"users"`
			Teams []map[string]string `json:"teams"`
		}
		body.Users, body.Teams = []map[string]string{}, []map[string]string{}
		for _, u := range users {
			body.Users = append(body.Users, map[string]string{"login": u, "type": "User"})
		}
		for _, team := range teams {
			body.Teams = append(body.Teams, map[string]string{"slug": team, "name": "Justice League"})
		}
		b, _ := json.Marshal(body)
		gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8", b)
	}
	reviews := func(b string) {
		gh.on("GET /repos/Codertocat/Hello-World/pulls/2/reviews", "application/json; charset=utf-8", []byte(b))
	}
	gh.on("GET /orgs/Codertocat/teams/justice-league/members", "application/json; charset=utf-8", []byte(`[{"login":"wonderwoman","type":"User"}]`))
	requested([]string{"octocat"})
	reviews(`[]`)
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}` // the seed
		c.AdminAPIKey = adminKey
	})
	clKey := job.ChangelistKey("github", ghChangelist)
	row := func(who string, v int) string { return delivery.ID(clKey, who, v) }

	// Opened: the requested reviewer gets version 1.
	resp, b := s.postGitHub("pull_request", "opened-1", githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.settled(v1.JobID, row(octocat, 1))
	s.expectEmails("after opened", everyone, 1, 0, 0)

	// A second reviewer is requested, whom nobody mapped to an address.
	requested([]string{"octocat", "hubot"})
	hubotRequested := editJSON(t, readFile(t, webhookData+"github/pull_request.review_requested.json"), func(m map[string]any) {
		m["requested_reviewer"].(map[string]any)["login"] = "hubot"
	})
	resp, b = s.postGitHub("pull_request", "requested-hubot", hubotRequested, ghSecret)
	var upd api.ReviewersUpdated
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &upd) != nil || upd.Status != "reviewers_updated" || upd.JobID != v1.JobID || upd.ReviewVersion != 1 {
		t.Fatalf("review_requested: %d %s, want 202 reviewers_updated for version 1", resp.StatusCode, b)
	}
	if r := s.settledRow(row("github:hubot", 1)); r.Status != delivery.StatusSkippedNoEmail {
		t.Fatalf("hubot's row is %s, want skipped_no_email (never a guessed address)", r.Status)
	}
	s.settled(v1.JobID)
	s.expectEmails("after hubot was requested, unknown", everyone, 1, 0, 0)
	// Whom to add: the admin API's unknown list (whole), the job view
	// (masked for the status link), the metric, the CLI.
	var unknown api.DirectoryList
	if code, body := s.request(http.MethodGet, "/admin/directory?source=github", map[string]string{"X-Api-Key": adminKey}, nil); code != http.StatusOK ||
		json.Unmarshal(body, &unknown) != nil || !slices.Equal(unknown.Unknown, []string{"hubot"}) {
		t.Fatalf("GET /admin/directory: %d %s, want unknown [hubot]", code, body)
	}
	var view api.JobView
	if s.getJSON(s.jobLink(v1.JobID), &view); !slices.Equal(view.UnknownReviewers, []string{"github:h***"}) {
		t.Fatalf("status link view: unknown reviewers %v, want masked", view.UnknownReviewers)
	}
	if countLines(s.logText(), `"UnknownReviewers":1`, `"Source":"github"`) == 0 {
		t.Fatal("no UnknownReviewers metric for the reviewer without an address")
	}
	out, err := s.cli("directory", "list", "--source", "github")
	if err != nil || !strings.Contains(out, "Unknown github reviewers") || !strings.Contains(out, "  hubot") {
		t.Fatalf("criticizer directory list: %v\n%s", err, out)
	}

	// The operator adds hubot with the CLI and wonderwoman with the admin
	// API; a team is requested: its member and hubot get version 1 now.
	if out, err := s.cli("directory", "set", "github", "HuBot", hubot); err != nil || !strings.Contains(out, "counts for the next delivery") {
		t.Fatalf("criticizer directory set: %v\n%s", err, out)
	}
	code, body := s.request(http.MethodPut, "/admin/directory/github/wonderwoman", map[string]string{"X-Api-Key": adminKey},
		[]byte(`{"email":"`+wonder+`"}`))
	if code != http.StatusOK || !strings.Contains(string(body), api.MaskEmail(wonder)) {
		t.Fatalf("PUT /admin/directory: %d %s", code, body)
	}
	if code, body := s.request(http.MethodPut, "/admin/directory/github/x", map[string]string{"X-Api-Key": adminKey}, []byte(`{"email":"X <x@y.z>"}`)); code != http.StatusBadRequest ||
		!strings.Contains(string(body), `"field":"email"`) {
		t.Fatalf("PUT with a display name: %d %s, want 400 naming email", code, body)
	}
	requested([]string{"octocat", "hubot"}, "justice-league")
	teamRequested := editJSON(t, readFile(t, webhookData+"github/pull_request.review_requested.json"), func(m map[string]any) {
		delete(m, "requested_reviewer")
		m["requested_team"] = map[string]any{"name": "Justice League", "id": 1, "slug": "justice-league", "privacy": "closed", "permission": "pull"}
	})
	if resp, b := s.postGitHub("pull_request", "requested-team", teamRequested, ghSecret); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("team requested: %d %s", resp.StatusCode, b)
	}
	s.settled(v1.JobID, row(hubot, 1), row(wonder, 1))
	s.expectEmails("after the team was requested", everyone, 1, 1, 1)
	// GitHub redelivers the same webhook: nothing more.
	if resp, b := s.postGitHub("pull_request", "requested-team", teamRequested, ghSecret); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("redelivery: %d %s", resp.StatusCode, b)
	}
	time.Sleep(3 * time.Second)
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	s.expectEmails("after a redelivery", everyone, 1, 1, 1)
	e := emailsTo(t, s.env.SES, wonder)[0]
	if versionOf(e) != 1 {
		t.Fatalf("the late reviewer's email %q is not version 1's critique", e.Subject)
	}
	if got, _ := s.fns.Jobs.Get(context.Background(), v1.JobID); got.Attempts[job.StageLLM] != 1 {
		t.Fatalf("llm attempts %d: adding a reviewer ran the model again", got.Attempts[job.StageLLM])
	}

	// octocat reviews (GitHub stops listing them as requested); hubot is
	// taken off.
	requested([]string{"hubot"}, "justice-league")
	reviews(`[{"user":{"login":"octocat"},"state":"APPROVED","submitted_at":"2019-05-15T15:20:38Z"},
		{"user":{"login":"Codertocat"},"state":"COMMENTED","submitted_at":"2019-05-15T15:21:00Z"}]`)
	reviewed := editJSON(t, readFile(t, webhookData+"github/pull_request_review.submitted.json"), func(m map[string]any) {
		m["review"].(map[string]any)["user"].(map[string]any)["login"] = "octocat"
	})
	resp, b = s.postGitHub("pull_request_review", "review-octocat", reviewed, ghSecret)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"recorded"`) {
		t.Fatalf("pull_request_review: %d %s, want 202 recorded", resp.StatusCode, b)
	}
	requested(nil, "justice-league")
	removed := editJSON(t, readFile(t, webhookData+"github/pull_request.review_request_removed.json"), func(m map[string]any) {
		m["requested_reviewer"].(map[string]any)["login"] = "hubot"
	})
	if resp, b := s.postGitHub("pull_request", "removed-hubot", removed, ghSecret); resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"recorded"`) {
		t.Fatalf("review_request_removed: %d %s, want 202 recorded", resp.StatusCode, b)
	}
	time.Sleep(time.Second)
	s.expectEmails("after a review and a removal", everyone, 1, 1, 1)

	// The next push: version 2 goes to the team's member and to octocat,
	// who reviewed; not to hubot, who was removed; not to Codertocat, the
	// author, who reviewed their own pull request.
	resp, b = s.postGitHub("pull_request", "sync-1", githubPayload(t, "pull_request.synchronize.json", newHeadSHA), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	v2 := decodeAccepted(t, b)
	s.settled(v2.JobID, row(octocat, 2), row(wonder, 2))
	s.expectEmails("after version 2", everyone, 2, 1, 2)
	j2, _ := s.fns.Jobs.Get(context.Background(), v2.JobID)
	if rs := j2.AllRecipients(); len(rs) != 2 {
		t.Fatalf("version 2's recipients %v, want wonderwoman and octocat only", rs)
	}
	if ids, _ := s.fns.Jobs.NoEmailReviewers(context.Background(), v2.JobID); len(ids) != 0 {
		t.Fatalf("version 2 has reviewers without an address: %v (the author or the removed one?)", ids)
	}
}

// GitLab: a reviewer added to an open merge request (an update whose
// changes.reviewers adds them) gets the current version once, the others
// nothing more; a reviewer taken off does not get the next version, pushed
// later; the merge request's author (from the REST API) is never mailed.
// Rules: R-REVIEWERS-1, R-REVIEWERS-2.
func TestGitLabReviewers_AddedThenRemoved(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	user1, user2, root := "user1@"+domain, "user2@"+domain, "root@"+domain
	everyone := []string{user1, user2, root}
	gl := newFakeReviewAPI(t)
	mr := "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
	gl.gitlabVersion(t, mr, newHeadSHA)
	gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json")) // author: root
	reviewersAre := func(names ...string) {
		var out []map[string]any
		for _, n := range names {
			out = append(out, map[string]any{"user": map[string]any{"username": n, "state": "active"}, "state": "unreviewed"})
		}
		b, _ := json.Marshal(out)
		gl.on("GET "+mr+"/reviewers", "application/json", b)
	}
	reviewersAre("user1", "root")
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
		c.ReviewerDirectory = `{"gitlab": {"user1": "` + user1 + `", "user2": "` + user2 + `", "root": "` + root + `"}}`
	})
	headers := func(uuid string) map[string]string {
		return map[string]string{webhook.GitLabTokenHeader: glToken, webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: uuid}
	}
	clKey := job.ChangelistKey("gitlab", "gitlabhq/gitlab-test!1")
	resp, b := s.postHook("/webhooks/gitlab", headers("open-1"), readFile(t, webhookData+"gitlab/merge_request.open.json"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("open: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.settled(v1.JobID, delivery.ID(clKey, user1, 1))
	s.expectEmails("after open", everyone, 1, 0, 0)

	reviewersAre("user1", "user2", "root")
	resp, b = s.postHook("/webhooks/gitlab", headers("update-reviewers-1"), readFile(t, webhookData+"gitlab/merge_request.update-reviewers.json"))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"reviewers_updated"`) {
		t.Fatalf("reviewer added: %d %s", resp.StatusCode, b)
	}
	s.settled(v1.JobID, delivery.ID(clKey, user2, 1))
	s.expectEmails("after user2 was added", everyone, 1, 1, 0)

	reviewersAre("user1", "root")
	taken := editJSON(t, readFile(t, webhookData+"gitlab/merge_request.update-reviewers.json"), func(m map[string]any) {
		r := m["changes"].(map[string]any)["reviewers"].(map[string]any)
		r["previous"], r["current"] = r["current"], r["previous"]
		m["object_attributes"].(map[string]any)["updated_at"] = "2013-12-03T17:40:00Z"
	})
	if resp, b := s.postHook("/webhooks/gitlab", headers("update-reviewers-2"), taken); resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"recorded"`) {
		t.Fatalf("reviewer removed: %d %s", resp.StatusCode, b)
	}
	pushed := editJSON(t, readFile(t, webhookData+"gitlab/merge_request.update-push.json"), func(m map[string]any) {
		m["object_attributes"].(map[string]any)["last_commit"].(map[string]any)["id"] = newHeadSHA
	})
	resp, b = s.postHook("/webhooks/gitlab", headers("update-push-1"), pushed)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push: %d %s", resp.StatusCode, b)
	}
	v2 := decodeAccepted(t, b)
	if v2.ReviewVersion != 2 {
		t.Fatalf("push: %s, want version 2", b)
	}
	s.settled(v2.JobID, delivery.ID(clKey, user1, 2))
	s.expectEmails("after version 2", everyone, 2, 1, 0)
}

// Gerrit: a reviewer added to a patch set already reviewed
// (reviewer-added) gets its critique once, with the address the REST API
// discloses; after reviewer-deleted, the next patch set is not mailed to
// them.
// Rules: R-REVIEWERS-1, R-REVIEWERS-2.
func TestGerritReviewers_AddedThenDeleted(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	john, jane, richard := "john.doe@"+domain, "jane.roe@"+domain, "richard.roe@"+domain
	everyone := []string{john, jane, richard}
	gr := newFakeReviewAPI(t)
	patch := []byte(base64.StdEncoding.EncodeToString(readFile(t, sourceData+"gerrit/patch.mbox")))
	gr.on("GET /a/changes/TestRepo1~2/revisions/2/patch", "text/plain; charset=ISO-8859-1", patch)
	gr.on("GET /a/changes/TestRepo1~2/revisions/3/patch", "text/plain; charset=ISO-8859-1", patch)
	recorded := bytes.ReplaceAll(readFile(t, sourceData+"gerrit/reviewers.json"), []byte("@example.com"), []byte("@"+domain))
	reviewersAre := func(withRichard bool) {
		b := recorded
		if withRichard {
			b = bytes.Replace(recorded, []byte("\n  ]"), []byte(`,
    {"_account_id": 1000098, "name": "Richard Roe", "email": "`+richard+`", "username": "rroe"}
  ]`), 1)
		}
		gr.on("GET /a/changes/TestRepo1~2/reviewers/", "application/json; charset=UTF-8", b)
	}
	reviewersAre(false)
	gr.gerritBranchAt("TestRepo1", 2, "patch_create", gerritTip)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.Gerrit = config.Gerrit{WebhookToken: gerritToken, APIURL: gr.srv.URL, Username: "criticizer", Password: "http-password"}
	})
	post := func(body []byte) api.Accepted {
		t.Helper()
		resp, b := s.postHook("/webhooks/gerrit?token="+gerritToken, nil, body)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("gerrit event: %d %s", resp.StatusCode, b)
		}
		var acc api.Accepted
		_ = json.Unmarshal(b, &acc)
		return acc
	}
	clKey := job.ChangelistKey("gerrit", "TestRepo1~2")
	ps2 := post(readFile(t, webhookData+"gerrit/patchset-created.json"))
	s.settled(ps2.JobID, delivery.ID(clKey, john, 2), delivery.ID(clKey, jane, 2))
	s.expectEmails("after patch set 2", everyone, 1, 1, 0)

	reviewersAre(true)
	if got := post(readFile(t, webhookData+"gerrit/reviewer-added.json")); got.JobID != ps2.JobID || got.ReviewVersion != 2 {
		t.Fatalf("reviewer-added: %+v, want patch set 2's job", got)
	}
	s.settled(ps2.JobID, delivery.ID(clKey, richard, 2))
	s.expectEmails("after richard was added", everyone, 1, 1, 1)

	reviewersAre(false)
	post(readFile(t, webhookData+"gerrit/reviewer-deleted.json"))
	ps3body := editJSON(t, readFile(t, webhookData+"gerrit/patchset-created.json"), func(m map[string]any) {
		ps := m["patchSet"].(map[string]any)
		ps["number"], ps["revision"] = 3, newHeadSHA
	})
	ps3 := post(ps3body)
	if ps3.ReviewVersion != 3 {
		t.Fatalf("patch set 3: version %d", ps3.ReviewVersion)
	}
	s.settled(ps3.JobID, delivery.ID(clKey, john, 3), delivery.ID(clKey, jane, 3))
	s.expectEmails("after patch set 3", everyone, 2, 2, 1)
}
