package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
	"github.com/criticizer/criticizer/internal/wire"
)

// These tests drive the code review system sources end to end: a recorded
// webhook payload, signed as the system signs it, posted to
// /webhooks/<source>; the system's REST API is an httptest server serving
// recorded responses (internal/source/testdata); reviewers are resolved
// through a directory; the emails land in the SES emulator.

const (
	ghSecret     = "e2e-github-webhook-secret-0123456789abcdef"
	glToken      = "e2e-gitlab-webhook-token-0123456789abcdef"
	gerritToken  = "e2e-gerrit-webhook-token-0123456789abcdef"
	webhookData  = "../webhook/testdata/"
	sourceData   = "../source/testdata/"
	newHeadSHA   = "34c5c7793cb3b279e22454cb6750c80560547b3a"
	ghOpenedSHA  = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	ghBaseSHA    = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e" // the recorded payloads' pull_request.base.sha
	ghChangelist = "Codertocat/Hello-World#2"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeReviewAPI is a code review system's REST API: recorded responses by
// request path (escaped, without the query), and what it was asked.
type fakeReviewAPI struct {
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]func(w http.ResponseWriter, r *http.Request)
	// prefixes answer every path that starts with the route, when no
	// route answers it exactly.
	prefixes map[string]func(w http.ResponseWriter, r *http.Request)
	got      []*http.Request
}

func newFakeReviewAPI(t *testing.T) *fakeReviewAPI {
	f := &fakeReviewAPI{routes: map[string]func(http.ResponseWriter, *http.Request){},
		prefixes: map[string]func(http.ResponseWriter, *http.Request){}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Clone(context.Background()))
		route := r.Method + " " + r.URL.EscapedPath()
		h, ok := f.routes[route]
		for p, ph := range f.prefixes {
			if !ok && strings.HasPrefix(route, p) {
				h, ok = ph, true
			}
		}
		f.mu.Unlock()
		if !ok && (strings.Contains(r.URL.Path, ".criticizer.yaml") || strings.Contains(r.URL.Path, "/contents/") ||
			strings.Contains(r.URL.Path, "/repository/files/")) {
			// A repository without settings (R-REPO-1), nor the file a
			// model's review reads at the head (R-CONTEXT-1), unless a
			// test serves it: 404, as GitHub's contents API and GitLab's
			// repository files API answer for a path a commit lacks.
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		if !ok {
			t.Errorf("fake API: unexpected request %s %s", r.Method, r.RequestURI)
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeReviewAPI) on(route, contentType string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}
}

// githubDiff serves diff as the comparison of any two commits of
// Codertocat/Hello-World: the diff of every version (R-SOURCE-5), and, as
// JSON, a comparison whose head is ahead of its base (a branch pushed to,
// never rewritten: githubHistory says otherwise).
func (f *fakeReviewAPI) githubDiff(diff []byte) {
	f.githubCompare(func(string, string) []byte { return diff }, nil)
}

// gitlabVersion serves the merge request at mr (its API path) as one
// version per head commit: the recorded one's (testdata/gitlab/
// versions.json, version.json, whose head the recorded hooks name), then
// one for each of heads, newest first, each with the recorded diffs and
// base (R-SOURCE-5).
func (f *fakeReviewAPI) gitlabVersion(t *testing.T, mr string, heads ...string) {
	t.Helper()
	var versions []map[string]any
	if err := json.Unmarshal(readFile(t, sourceData+"gitlab/versions.json"), &versions); err != nil {
		t.Fatal(err)
	}
	recorded := versions[len(versions)-1] // the oldest: the recorded hooks' head
	list := []map[string]any{recorded}
	for i, h := range heads {
		v := map[string]any{"id": 200 + i, "head_commit_sha": h, "base_commit_sha": recorded["base_commit_sha"],
			"start_commit_sha": recorded["start_commit_sha"]}
		list = append([]map[string]any{v}, list...)
		f.on(fmt.Sprintf("GET %s/versions/%d", mr, 200+i), "application/json", readFile(t, sourceData+"gitlab/version.json"))
	}
	b, _ := json.Marshal(list)
	f.on("GET "+mr+"/versions", "application/json", b)
	f.on("GET "+mr+"/versions/110", "application/json", readFile(t, sourceData+"gitlab/version.json"))
}

// githubReviewsAndTeams serves the pull request's reviews (reviews, a JSON
// list) and answers the requested team's member list with teamStatus (200:
// two members, octocat and wonderwoman; 403 or 404: hidden from the token).
func (f *fakeReviewAPI) githubReviewsAndTeams(t *testing.T, reviews string, teamStatus int) {
	t.Helper()
	f.on("GET /repos/Codertocat/Hello-World/pulls/2/reviews", "application/json; charset=utf-8", []byte(reviews))
	f.mu.Lock()
	defer f.mu.Unlock()
	members := readFile(t, sourceData+"github/team_members.json")
	f.routes["GET /orgs/Codertocat/teams/justice-league/members"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if teamStatus != http.StatusOK {
			w.WriteHeader(teamStatus)
			w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		w.Write(members)
	}
}

func (f *fakeReviewAPI) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.got...)
}

// postHook posts a webhook with the given headers to path.
func (s *stack) postHook(path string, headers map[string]string, body []byte) (*http.Response, []byte) {
	s.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return s.send(http.MethodPost, path, h, body)
}

// send makes one request to the stack's API and reads the answer.
func (s *stack) send(method, path string, headers map[string]string, body []byte) (*http.Response, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+path, bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (s *stack) postGitHub(event, deliveryID string, body []byte, secret string) (*http.Response, []byte) {
	s.t.Helper()
	return s.postHook("/webhooks/github", map[string]string{
		webhook.GitHubEventHeader: event, webhook.GitHubDeliveryHeader: deliveryID,
		webhook.GitHubSignatureHeader: webhook.Sign([]byte(secret), body),
	}, body)
}

// emailsTo returns the stored emails addressed to one recipient.
func emailsTo(t *testing.T, ses *devstack.SESEmulator, rcpt string) []devstack.StoredEmail {
	t.Helper()
	all, err := ses.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []devstack.StoredEmail
	for _, e := range all {
		for _, to := range e.Destination.To {
			if strings.EqualFold(to, rcpt) {
				out = append(out, e)
			}
		}
	}
	return out
}

// scanAll returns every item of a table.
func (s *stack) scanAll(table string) []map[string]types.AttributeValue {
	s.t.Helper()
	out, err := s.env.Clients.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Items
}

func (s *stack) deliveryRow(id string) delivery.Row {
	s.t.Helper()
	r, err := s.fns.Deliveries.Get(context.Background(), id)
	if err != nil {
		s.t.Fatalf("delivery row %s: %v", id, err)
	}
	return r
}

func decodeAccepted(t *testing.T, b []byte) api.Accepted {
	t.Helper()
	var acc api.Accepted
	if err := json.Unmarshal(b, &acc); err != nil || acc.JobID == "" {
		t.Fatalf("not an accepted body: %s", b)
	}
	return acc
}

// githubPayload returns a recorded GitHub payload, its head commit
// replaced when sha is not empty.
func githubPayload(t *testing.T, file, sha string) []byte {
	t.Helper()
	b := readFile(t, webhookData+"github/"+file)
	if sha == "" {
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// githubPayloadAt returns a recorded GitHub payload with its head and
// base commits replaced.
func githubPayloadAt(t *testing.T, file, head, base string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(githubPayload(t, file, head), &m); err != nil {
		t.Fatal(err)
	}
	m["pull_request"].(map[string]any)["base"].(map[string]any)["sha"] = base
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGitHubPullRequest_OneEmailPerMappedReviewer_SkipsUnmapped_RedeliveryNothing_SynchronizeV2
// is end to end for GitHub: a signed pull_request.opened is
// reviewed as version 1; the diff and the requested reviewers come from the
// REST API; the reviewer the directory knows gets exactly one email, the
// other gets a skipped_no_email row, and the job succeeds. A redelivery
// (same X-GitHub-Delivery) answers the same bytes and sends nothing; another
// delivery of the same head commit is the same version; a synchronize with a
// new head commit is version 2 and mails again; a ping creates nothing.
func TestGitHubPullRequest_OneEmailPerMappedReviewer_SkipsUnmapped_RedeliveryNothing_SynchronizeV2(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat := "octocat@" + domain
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json")) // octocat and hubot, and a team
	gh.githubReviewsAndTeams(t, "[]", 404) // nobody reviewed yet; the team hidden from the token
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
	})

	// A ping (sent when the hook is created): acknowledged, nothing made.
	resp, b := s.postGitHub("ping", "ping-1", readFile(t, webhookData+"github/ping.json"), ghSecret)
	var ign api.Ignored
	if resp.StatusCode/100 != 2 || json.Unmarshal(b, &ign) != nil || ign.Status != "ignored" || ign.Reason != "ping" {
		t.Fatalf("ping: %d %s, want 2xx ignored/ping", resp.StatusCode, b)
	}
	// Only job-related items count: the evidence watermark (EVIDENCE#) is
	// the feedback function's, written whenever any SES event is
	// recorded, whatever this request did.
	for _, it := range s.scanAll(s.res.JobsTable) {
		if pk, _ := it["pk"].(*types.AttributeValueMemberS); pk == nil || !strings.HasPrefix(pk.Value, "EVIDENCE#") {
			t.Fatalf("a ping wrote %v to the jobs table", it["pk"])
		}
	}
	// A source without its secret is not routed.
	if resp, b := s.postHook("/webhooks/gitlab", nil, []byte(`{}`)); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "source not configured") {
		t.Fatalf("unconfigured gitlab: %d %s, want 404 source not configured", resp.StatusCode, b)
	}

	opened := githubPayload(t, "pull_request.opened.json", "")
	resp, first := s.postGitHub("pull_request", "delivery-opened-1", opened, ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, first)
	}
	v1 := decodeAccepted(t, first)
	if v1.ReviewVersion != 1 || v1.ChangelistID != ghChangelist {
		t.Fatalf("opened: %s, want version 1 of %s", first, ghChangelist)
	}
	view := s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 1 {
		t.Fatalf("octocat got %d emails, want 1", n)
	}
	clKey := job.ChangelistKey("github", ghChangelist)
	sent := s.deliveryRow(delivery.ID(clKey, octocat, 1))
	if sent.NotifiedAt.IsZero() || sent.Attempts != 1 {
		t.Errorf("octocat's row: %+v, want sent once", sent)
	}
	skipped := s.deliveryRow(delivery.ID(clKey, "github:hubot", 1))
	if skipped.Status != delivery.StatusSkippedNoEmail || skipped.Attempts != 0 || !skipped.NotifiedAt.IsZero() || skipped.Recipient != "github:hubot" {
		t.Errorf("hubot's row: %+v, want skipped_no_email, never attempted", skipped)
	}
	statuses := map[string]delivery.Status{}
	for _, d := range view.Deliveries {
		statuses[d.Recipient] = d.Status
	}
	if len(view.Deliveries) != 2 || statuses["github:h***"] != delivery.StatusSkippedNoEmail ||
		(statuses[api.MaskEmail("o@"+domain)] != delivery.StatusSent && statuses[api.MaskEmail("o@"+domain)] != delivery.StatusDelivered) {
		t.Errorf("GET /jobs deliveries: %+v", view.Deliveries)
	}
	e := emailsTo(t, s.env.SES, octocat)[0]
	if !strings.Contains(e.Subject, ghChangelist+": ") || versionOf(e) != 1 || !strings.Contains(e.Body.Text, "hello.go") {
		t.Errorf("email subject %q / body does not review the fetched diff:\n%s", e.Subject, e.Body.Text)
	}
	for _, r := range gh.requests() {
		if r.Header.Get("Authorization") != "Bearer e2e-github-api-token" {
			t.Errorf("%s sent without the API token", r.URL.Path)
		}
	}

	// The same delivery again (GitHub's "Redeliver"): the same bytes.
	resp, again := s.postGitHub("pull_request", "delivery-opened-1", opened, ghSecret)
	if resp.StatusCode != http.StatusAccepted || string(again) != string(first) || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("redelivery: %d %s (replayed %q), want 202 %s", resp.StatusCode, again, resp.Header.Get("Idempotent-Replayed"), first)
	}
	// Another delivery naming the same head commit: the same version.
	resp, b = s.postGitHub("pull_request", "delivery-reopened-1", githubPayload(t, "pull_request.opened.json", ghOpenedSHA), ghSecret)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), string(v1.JobID)) || !strings.Contains(string(b), `"review_version":1`) {
		t.Fatalf("same commit, other delivery: %d %s, want 200 with the v1 job", resp.StatusCode, b)
	}

	// New commits pushed: version 2, a new email.
	syncBody := githubPayload(t, "pull_request.synchronize.json", newHeadSHA)
	resp, b = s.postGitHub("pull_request", "delivery-sync-1", syncBody, ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	v2 := decodeAccepted(t, b)
	if v2.ReviewVersion != 2 || v2.JobID == v1.JobID {
		t.Fatalf("synchronize: %s, want a new job for version 2", b)
	}
	s.waitJob(v2.JobID, 30*time.Second, job.StatusSucceeded)
	emails := emailsTo(t, s.env.SES, octocat)
	if len(emails) != 2 {
		t.Fatalf("octocat got %d emails after v2, want 2", len(emails))
	}
	if s.deliveryRow(delivery.ID(clKey, "github:hubot", 2)).Status != delivery.StatusSkippedNoEmail {
		t.Error("v2: hubot's row is not skipped_no_email")
	}
	time.Sleep(2 * time.Second)
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 2 {
		t.Fatalf("octocat has %d emails after settling, want 2", n)
	}
	if n := countKind(s.scanAll(s.res.JobsTable), "job"); n != 2 {
		t.Fatalf("%d jobs, want 2 (v1, v2)", n)
	}

	// Concurrent deliveries of one new head commit (several events for
	// one push, under different delivery ids): one version, higher than
	// v2, one job, one email. (Racing deliveries may each draw a number
	// from the counter before one wins the commit's mapping, so the version
	// may skip some: versions increase, they are not dense.)
	const n = 6
	thirdSHA := "0123456789abcdef0123456789abcdef01234567"
	third := githubPayload(t, "pull_request.synchronize.json", thirdSHA)
	type answer struct {
		status int
		acc    api.Accepted
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, b := s.postGitHub("pull_request", fmt.Sprintf("delivery-third-%d", i), third, ghSecret)
			answers[i].status = resp.StatusCode
			_ = json.Unmarshal(b, &answers[i].acc)
		})
	}
	wg.Wait()
	created := 0
	for i, a := range answers {
		if a.status == http.StatusAccepted {
			created++
		}
		if (a.status != http.StatusAccepted && a.status != http.StatusOK) || a.acc.ReviewVersion <= 2 || a.acc.JobID != answers[0].acc.JobID {
			t.Fatalf("concurrent delivery %d: %d %+v, want one job, version above 2", i, a.status, a.acc)
		}
	}
	if created != 1 {
		t.Fatalf("%d concurrent deliveries created a job, want exactly 1", created)
	}
	s.waitJob(answers[0].acc.JobID, 30*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second)
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 3 {
		t.Fatalf("octocat has %d emails after the third commit, want 3", n)
	}
}

// A GitHub webhook with a wrong (or missing) signature is refused with 401
// and writes nothing: no job, no version, no source reference.
// Rules: R-INTAKE-6.
func TestGitHubWebhook_WrongSignature_401_NothingCreated(t *testing.T) {
	t.Parallel()
	gh := newFakeReviewAPI(t)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, APIURL: gh.srv.URL}
	})
	body := githubPayload(t, "pull_request.opened.json", "")
	for name, sig := range map[string]string{
		"wrong secret":  webhook.Sign([]byte("not-the-secret"), body),
		"missing":       "",
		"generic's key": webhook.Sign([]byte(secret), body),
	} {
		resp, b := s.postHook("/webhooks/github", map[string]string{
			webhook.GitHubEventHeader: "pull_request", webhook.GitHubDeliveryHeader: "d-" + name, webhook.GitHubSignatureHeader: sig,
		}, body)
		var p api.Problem
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &p) != nil || p.Error != "unauthorized" {
			t.Errorf("%s: %d %s, want 401", name, resp.StatusCode, b)
		}
	}
	if items := s.scanAll(s.res.JobsTable); len(items) != 0 {
		t.Fatalf("refused requests wrote %d items to the jobs table", len(items))
	}
	if items := s.scanAll(s.res.DeliveriesTable); len(items) != 0 {
		t.Fatalf("refused requests wrote %d delivery rows", len(items))
	}
	if n := len(gh.requests()); n != 0 {
		t.Fatalf("refused requests reached the GitHub API %d times", n)
	}
}

// Gerrit: a patchset-created event authenticated by the hook URL's ?token=
// is reviewed as version <patch set>; the reviewers and their addresses
// come from the REST API (Gerrit discloses them), the patch from
// /revisions/<ps>/patch. A wrong token is 401.
func TestGerritPatchsetCreated_VersionIsPatchset_ReviewersFromREST(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	gr := newFakeReviewAPI(t)
	gr.on("GET /a/changes/TestRepo1~2/revisions/2/patch", "text/plain; charset=ISO-8859-1",
		[]byte(base64.StdEncoding.EncodeToString(readFile(t, sourceData+"gerrit/patch.mbox"))))
	gr.on("GET /a/changes/TestRepo1~2/reviewers/", "application/json; charset=UTF-8",
		bytes.ReplaceAll(readFile(t, sourceData+"gerrit/reviewers.json"), []byte("@example.com"), []byte("@"+domain)))
	gr.gerritBranchAt("TestRepo1", 2, "patch_create", gerritTip)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.Gerrit = config.Gerrit{WebhookToken: gerritToken, APIURL: gr.srv.URL, Username: "criticizer", Password: "http-password"}
	})
	body := readFile(t, webhookData+"gerrit/patchset-created.json")

	if resp, b := s.postHook("/webhooks/gerrit?token=wrong", nil, body); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s, want 401", resp.StatusCode, b)
	}
	resp, b := s.postHook("/webhooks/gerrit?token="+gerritToken, nil, body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("patchset-created: %d %s", resp.StatusCode, b)
	}
	acc := decodeAccepted(t, b)
	if acc.ReviewVersion != 2 || acc.ChangelistID != "TestRepo1~2" {
		t.Fatalf("patchset-created: %s, want version 2 (the patch set) of TestRepo1~2", b)
	}
	s.waitJob(acc.JobID, 30*time.Second, job.StatusSucceeded)
	for _, who := range []string{"john.doe@" + domain, "jane.roe@" + domain} {
		if n := len(emailsTo(t, s.env.SES, who)); n != 1 {
			t.Errorf("%s got %d emails, want 1", who, n)
		}
	}
	// The plugin sends the event again: the same answer, nothing new.
	resp, again := s.postHook("/webhooks/gerrit?token="+gerritToken, nil, body)
	if resp.StatusCode != http.StatusAccepted || string(again) != string(b) {
		t.Fatalf("re-sent event: %d %s, want 202 %s", resp.StatusCode, again, b)
	}
	for _, r := range gr.requests() {
		if u, p, ok := r.BasicAuth(); !ok || u != "criticizer" || p != "http-password" {
			t.Errorf("%s sent without the REST credentials", r.URL.Path)
		}
	}
}

// GitLab: a merge request "open" hook with X-Gitlab-Token is version 1;
// the diff and reviewers come from the REST API; user1 is in the directory,
// user2 is not. Other hooks (push) are acknowledged and ignored.
func TestGitLabMergeRequest_MappedReviewerMailed_UnmappedSkipped(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	gl := newFakeReviewAPI(t)
	mr := "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
	gl.gitlabVersion(t, mr)
	gl.on("GET "+mr+"/reviewers", "application/json", readFile(t, sourceData+"gitlab/reviewers.json"))
	gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
		c.ReviewerDirectory = `{"gitlab": {"user1": "user1@` + domain + `"}}`
	})
	headers := func(event, uuid string) map[string]string {
		return map[string]string{webhook.GitLabTokenHeader: glToken, webhook.GitLabEventHeader: event, webhook.GitLabEventUUIDHeader: uuid}
	}
	resp, b := s.postHook("/webhooks/gitlab", headers("Push Hook", "push-1"), readFile(t, webhookData+"gitlab/push.json"))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"ignored"`) {
		t.Fatalf("push hook: %d %s, want 202 ignored", resp.StatusCode, b)
	}
	resp, b = s.postHook("/webhooks/gitlab", headers("Merge Request Hook", "mr-open-1"), readFile(t, webhookData+"gitlab/merge_request.open.json"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("merge request: %d %s", resp.StatusCode, b)
	}
	acc := decodeAccepted(t, b)
	if acc.ReviewVersion != 1 || acc.ChangelistID != "gitlabhq/gitlab-test!1" {
		t.Fatalf("merge request: %s", b)
	}
	s.waitJob(acc.JobID, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsTo(t, s.env.SES, "user1@"+domain)); n != 1 {
		t.Fatalf("user1 got %d emails, want 1", n)
	}
	clKey := job.ChangelistKey("gitlab", acc.ChangelistID)
	if r := s.deliveryRow(delivery.ID(clKey, "gitlab:user2", 1)); r.Status != delivery.StatusSkippedNoEmail {
		t.Fatalf("user2's row is %q, want skipped_no_email", r.Status)
	}
	for _, r := range gl.requests() {
		if r.Header.Get("PRIVATE-TOKEN") != "e2e-gitlab-api-token" {
			t.Errorf("%s sent without the API token", r.URL.Path)
		}
	}
}

// The source samples in events/ (API Gateway events for `sam local invoke
// -e`) are accepted by the intake function when each source's webhook
// secret is the local stack's own (devstack.Local…): each becomes a job (the Gerrit one is
// authenticated by the token in its query string).
func TestSourceSampleEvents_AcceptedByIntake(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoints = env.Endpoints
	cfg.GitHub.WebhookSecret, cfg.GitLab.WebhookToken = devstack.LocalGitHubSecret, devstack.LocalGitLabToken
	cfg.Gerrit = config.Gerrit{WebhookToken: devstack.LocalGerritToken, APIURL: "http://127.0.0.1:1"}
	res.Apply(&cfg)
	h, err := devstack.Handler(context.Background(), "intake", cfg, res, obs.NewLogger(io.Discard, "error"), wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"intake-github-pull_request.json":     ghChangelist,
		"intake-gitlab-merge_request.json":    "gitlabhq/gitlab-test!1",
		"intake-gerrit-patchset-created.json": "TestRepo1~2",
	} {
		out, err := lambda.NewHandler(h).Invoke(context.Background(), readFile(t, "../../events/"+file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, fmt.Sprintf("%q", want)) {
			t.Errorf("%s: %d %s, want 202 for %s", file, resp.StatusCode, resp.Body, want)
		}
	}
}

// CRITICIZER_SECRETS_ARN: the secret (a JSON object of variable names) is
// read once at init with GetSecretValue, signed with the app's credentials, and
// fills in the settings the environment left unset; a key that is not a
// secret setting is refused.
// Rules: R-PRIVACY-2.
func TestSecretsARN_FillsUnsetSettings(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	var calls int
	var mu sync.Mutex
	arn := "arn:aws:secretsmanager:us-west-2:123456789012:secret:" + testenv.Prefix(t)
	secretValue := `{"CRITICIZER_GITHUB_WEBHOOK_SECRET":"from-the-secret-value-0123456789abcdef","CRITICIZER_GITHUB_TOKEN":"api-token","CRITICIZER_WEBHOOK_SECRET":"ignored-the-environment-wins-0123456789"}`
	sm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		var in struct{ SecretId string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") ||
			!strings.Contains(r.Header.Get("Authorization"), "/us-west-2/secretsmanager/aws4_request") {
			http.Error(w, `{"__type":"AccessDeniedException"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch in.SecretId {
		case arn + "-ok":
			json.NewEncoder(w).Encode(map[string]string{"ARN": in.SecretId, "SecretString": secretValue})
		case arn + "-typo":
			json.NewEncoder(w).Encode(map[string]string{"ARN": in.SecretId, "SecretString": `{"CRITICIZER_GITHUB_SECRET":"x"}`})
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"no such secret"}`))
		}
	}))
	defer sm.Close()
	build := func(arn string) (config.Config, error) {
		cfg, err := config.FromEnv(func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Endpoints, cfg.WebhookSecret = env.Endpoints, "from-the-environment-0123456789abcdef"
		cfg.SecretsARN, cfg.Endpoints.SecretsManager = arn, sm.URL
		res.Apply(&cfg)
		awsCfg, err := profile.Load(context.Background(), cfg.Endpoints)
		if err != nil {
			t.Fatal(err)
		}
		return secrets.Apply(context.Background(), awsCfg, cfg)
	}
	got, err := build(arn + "-ok")
	if err != nil {
		t.Fatal(err)
	}
	a := struct{ Config config.Config }{got}
	if a.Config.GitHub.WebhookSecret != "from-the-secret-value-0123456789abcdef" || a.Config.GitHub.Token != "api-token" || a.Config.WebhookSecret != "from-the-environment-0123456789abcdef" {
		t.Fatalf("config after the secret: github %+v, generic secret set from the env: %v", a.Config.GitHub, a.Config.WebhookSecret == "from-the-environment-0123456789abcdef")
	}
	if calls != 1 {
		t.Fatalf("GetSecretValue called %d times at init, want once", calls)
	}
	_, err = build(arn + "-typo")
	if err == nil || !strings.Contains(err.Error(), "CRITICIZER_GITHUB_SECRET") || strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("a secret with an unknown key: %v", err)
	}
	_, err = build(arn + "-missing")
	if err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Fatalf("a missing secret: %v", err)
	}
}
