package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// These tests post each version's review on the change itself
// (R-CHANNEL-10): the GitHub stand-in's check runs (devstack.GitHubChecks)
// and commit statuses are mounted on the recorded API, and keep what a
// reader of the pull request would see.

const ghRepo = "Codertocat/Hello-World"

// appKeyPEM is a fresh GitHub App private key, PKCS #1 as GitHub issues
// them.
func appKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// mountChecks serves the GitHub App's routes, check runs and commit
// statuses of the stand-in on gh, with loss dropping answers after the
// work.
func mountChecks(gh *fakeReviewAPI, loss *devstack.AnswerLoss) *devstack.GitHubChecks {
	checks := &devstack.GitHubChecks{Repo: ghRepo}
	h := loss.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !checks.Serve(w, r) {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		}
	}))
	gh.mu.Lock()
	defer gh.mu.Unlock()
	for _, p := range []string{"POST /app/installations/", "GET /repos/" + ghRepo + "/installation",
		"POST /repos/" + ghRepo + "/check-runs", "PATCH /repos/" + ghRepo + "/check-runs/", "GET /repos/" + ghRepo + "/check-runs/",
		"GET /repos/" + ghRepo + "/commits/", "POST /repos/" + ghRepo + "/statuses/"} {
		gh.prefixes[p] = h.ServeHTTP
	}
	return checks
}

// codeHostStack is versionsStack's pull request with the code host
// status on: as a GitHub App (check runs) when app, else with a token
// (commit statuses).
func codeHostStack(t *testing.T, app bool, loss *devstack.AnswerLoss, setup ...func(*fakeReviewAPI)) (*stack, *devstack.GitHubChecks, string) {
	t.Helper()
	octocat := "octocat@" + testenv.Prefix(t) + ".example.com"
	gh := newFakeReviewAPI(t)
	gh.githubCompare(func(_, head string) []byte {
		return []byte(gitDiff([]addedFile{{headFile(head), []string{"package x", "// TODO: the change at " + head[:7]}}}))
	}, pushes(nil))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	checks := mountChecks(gh, loss)
	for _, f := range setup {
		f(gh)
	}
	key := ""
	if app {
		key = appKeyPEM(t)
	}
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, APIURL: gh.srv.URL}
		if app {
			c.GitHub.App = config.GitHubApp{ID: "1", InstallationID: "1", PrivateKey: key}
		} else {
			c.GitHub.Token = "e2e-github-api-token"
		}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
		c.Notify.CodeHost = config.CodeHost{Status: true}
	})
	return s, checks, octocat
}

// GitHub App: the pull request opened at x3, then pushed to x5 → one
// completed check run on each head commit, with annotations at the
// findings' lines, and the emails as before; the first create's answer
// lost after GitHub stored the run → still one check run on x3.
// Rules: R-CHANNEL-10, R-CHANNEL-11, R-CHANNEL-14.
func TestGitHubApp_CheckRunPerHead_LostCreateStillOne(t *testing.T) {
	t.Parallel()
	var loss devstack.AnswerLoss
	loss.Lose(http.MethodPost, "/check-runs", 1)
	s, checks, octocat := codeHostStack(t, true, &loss)

	s.accepted(s.push("opened-x3", githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)), 1, job.StatusSucceeded)
	s.accepted(s.push("sync-x5", syncPayload(t, xs[5], xs[3])), 2, job.StatusSucceeded)
	for _, i := range []int{3, 5} {
		head := xs[i]
		eventually(t, 60*time.Second, headFile(head)+"'s check run completed", func() bool {
			runs := checks.CheckRuns(head)
			return len(runs) == 1 && runs[0].Status == "completed"
		})
	}
	time.Sleep(2 * time.Second) // nothing more comes
	if loss.Lost() != 1 {
		t.Fatalf("%d answers lost; want the first create's", loss.Lost())
	}
	for _, i := range []int{3, 5} {
		head := xs[i]
		runs := checks.CheckRuns(head)
		if len(runs) != 1 {
			t.Fatalf("%s: %d check runs; want 1", headFile(head), len(runs))
		}
		r := runs[0]
		if r.Name != "Criticizer" || r.Conclusion == nil || *r.Conclusion != "neutral" || r.ExternalID == "" {
			t.Errorf("%s: %s %v %q; want Criticizer, neutral (a TODO finding)", headFile(head), r.Name, r.Conclusion, r.ExternalID)
		}
		found := false
		for _, a := range r.Annotations {
			found = found || (a.Path == headFile(head) && a.StartLine == 2 && a.EndLine == 2)
		}
		if !found {
			t.Errorf("%s: annotations %+v; want one at %s line 2 (the TODO)", headFile(head), r.Annotations, headFile(head))
		}
		if !strings.Contains(r.Summary, "1 warning") && !strings.Contains(r.Summary, "1 info") && !strings.Contains(r.Summary, "1 error") {
			t.Errorf("%s: summary %q says no counts", headFile(head), r.Summary)
		}
	}
	if runs := checks.CheckRuns(""); len(runs) != 2 || runs[0].ExternalID == runs[1].ExternalID {
		t.Fatalf("check runs %+v; want two, one per version", runs)
	}
	if mailed := mailedHeads(t, s, octocat); len(mailed) != 2 || mailed[1] != "3" || mailed[2] != "5" {
		t.Fatalf("emails by version %v; want x3's and x5's, as before", mailed)
	}
	for v := 1; v <= 2; v++ {
		postSent(t, s, "github", ghChangelist, v, "github-check", channel.Finished)
	}
}

// With a token (no App, which could create check runs): one commit
// status of context criticizer per head commit, finished, its target
// the job.
// Rules: R-CHANNEL-10, R-CHANNEL-11.
func TestGitHubToken_CommitStatusPerHead(t *testing.T) {
	t.Parallel()
	var loss devstack.AnswerLoss
	s, checks, octocat := codeHostStack(t, false, &loss)
	s.accepted(s.push("opened-x3", githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)), 1, job.StatusSucceeded)
	s.accepted(s.push("sync-x5", syncPayload(t, xs[5], xs[3])), 2, job.StatusSucceeded)
	for _, i := range []int{3, 5} {
		head := xs[i]
		eventually(t, 60*time.Second, headFile(head)+"'s status success", func() bool {
			st := checks.Statuses(head)
			return len(st) > 0 && st[len(st)-1].State == "success"
		})
	}
	time.Sleep(2 * time.Second)
	targets := map[string]bool{}
	for _, i := range []int{3, 5} {
		st := checks.Statuses(xs[i])
		last := st[len(st)-1]
		if len(st) > 2 || last.Context != "criticizer" || !strings.Contains(last.Description, "finding") {
			t.Errorf("%s: statuses %+v; want pending then success, context criticizer, the counts", headFile(xs[i]), st)
		}
		for _, x := range st {
			if x.TargetURL != last.TargetURL {
				t.Errorf("%s: statuses of two jobs %+v", headFile(xs[i]), st)
			}
		}
		targets[last.TargetURL] = true
	}
	if len(checks.CheckRuns("")) != 0 {
		t.Fatal("a check run with a token")
	}
	if mailed := mailedHeads(t, s, octocat); len(mailed) != 2 {
		t.Fatalf("emails by version %v; want two", mailed)
	}
}

// GitLab: the merge request's version gets one commit status named
// criticizer on its head, running then success with the counts; the
// success's answer is lost after GitLab set it, and the resend is found
// (GitLab's 400 for a state the status has), not doubled; the email goes
// out as before.
// Rules: R-CHANNEL-10, R-CHANNEL-14.
func TestGitLab_CommitStatusOnTheVersionsHead_LostAnswerFound(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	gl := newFakeReviewAPI(t)
	mr := "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
	gl.gitlabVersion(t, mr)
	gl.on("GET "+mr+"/reviewers", "application/json", readFile(t, sourceData+"gitlab/reviewers.json"))
	gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
	statuses := &devstack.GitLabStatuses{Project: "gitlabhq/gitlab-test"}
	var loss devstack.AnswerLoss
	loss.LoseWith(http.MethodPost, "/statuses/", `"state":"success"`, 1) // the success's answer is lost
	h := loss.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !statuses.Serve(w, r) {
			http.Error(w, `{"message":"404 Not Found"}`, http.StatusNotFound)
		}
	}))
	gl.mu.Lock()
	gl.prefixes["POST /api/v4/projects/gitlabhq%2Fgitlab-test/statuses/"] = h.ServeHTTP
	gl.prefixes["GET /api/v4/projects/gitlabhq%2Fgitlab-test/repository/commits/"] = h.ServeHTTP
	gl.mu.Unlock()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
		c.ReviewerDirectory = `{"gitlab": {"user1": "user1@` + domain + `"}}`
		c.Notify.CodeHost = config.CodeHost{Status: true}
	})
	resp, b := s.postHook("/webhooks/gitlab", map[string]string{webhook.GitLabTokenHeader: glToken,
		webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: "mr-open-1"},
		readFile(t, webhookData+"gitlab/merge_request.open.json"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("merge request: %d %s", resp.StatusCode, b)
	}
	s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	eventually(t, 60*time.Second, "the status success", func() bool {
		st := statuses.Statuses("")
		return len(st) == 1 && st[0].Status == "success"
	})
	time.Sleep(2 * time.Second) // nothing more comes
	st := statuses.Statuses("")
	if loss.Lost() != 1 || len(st) != 1 || st[0].Name != "criticizer" || st[0].SHA == "" {
		t.Fatalf("lost %d, statuses %+v; want one success named criticizer on the head", loss.Lost(), st)
	}
	if n := len(emailsTo(t, s.env.SES, "user1@"+domain)); n != 1 {
		t.Fatalf("user1 got %d emails, want 1", n)
	}
	postSent(t, s, "gitlab", "gitlabhq/gitlab-test!1", 1, "gitlab-status", channel.Finished)
}

// Gerrit: nothing when the patch set starts to be reviewed; one review
// message tagged autogenerated:criticizer on it when it is, with no vote;
// its answer lost after Gerrit stored it → still one message; the emails
// as before.
// Rules: R-CHANNEL-10, R-CHANNEL-14.
func TestGerrit_OneTaggedReviewMessage_LostAnswerStillOne(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	api, g := gerritStandIn(t, domain)
	var loss devstack.AnswerLoss
	loss.Lose(http.MethodPost, "/review", 1)
	api.mu.Lock()
	api.prefixes["POST /a/"] = loss.Wrap(g).ServeHTTP
	api.mu.Unlock()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.Gerrit = config.Gerrit{WebhookToken: gerritToken, APIURL: api.srv.URL, Username: "criticizer", Password: "http-password"}
		c.Notify.CodeHost = config.CodeHost{Status: true}
	})
	resp, b := s.postHook("/webhooks/gerrit?token="+gerritToken, nil, readFile(t, webhookData+"gerrit/patchset-created.json"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("patchset-created: %d %s", resp.StatusCode, b)
	}
	s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	eventually(t, 60*time.Second, "the review message, its lost answer found", func() bool {
		return loss.Lost() == 1 && len(g.Messages(2)) == 1 && countLines(s.logText(), "post found on its channel") > 0
	})
	time.Sleep(2 * time.Second)
	msgs := g.Messages(2)
	if len(msgs) != 1 {
		t.Fatalf("%d messages; want 1", len(msgs))
	}
	m := msgs[0]
	if m.Tag != "autogenerated:criticizer" || m.RevisionNumber != 2 || len(m.Labels) != 0 || !strings.Contains(m.Message, "criticizer-post: ") {
		t.Fatalf("message %+v; want one tagged on patch set 2, no vote, naming its post", m)
	}
	for _, who := range []string{"john.doe@" + domain, "jane.roe@" + domain} {
		if n := len(emailsTo(t, s.env.SES, who)); n != 1 {
			t.Errorf("%s got %d emails, want 1", who, n)
		}
	}
	postSent(t, s, "gerrit", "TestRepo1~2", 2, "gerrit-message", channel.Finished)
}

// postSent fails unless the post row of version v of cl on ch in phase
// is sent: the protocol settled it with the host's receipt (found or
// sent), not left it to retries or the DLQ.
func postSent(t *testing.T, s *stack, source, cl string, v int, ch string, phase channel.Phase) {
	t.Helper()
	id := channel.PostID(channel.VersionKeyOf(source, cl, v), ch, phase)
	r, err := dynamo.NewPosts(s.fns.Base.DynamoDB, s.res.DeliveriesTable, time.Now).GetPost(context.Background(), id)
	if err != nil || r.Status != channel.StatusSent || r.Receipt.Ref == "" {
		t.Fatalf("%s %s v%d %s: %s %+v %v; want sent with a receipt", ch, cl, v, phase, r.Status, r.Receipt, err)
	}
}

// A repository whose .criticizer.yaml (at the base) says
// code_host_status: off gets no status on its change (its Started post
// waits for the fetch stage's write, which carries the setting) and its
// email as before.
// Rules: R-CHANNEL-10.
func TestRepoStatusOff_NoStatusLeftPending_EmailAsBefore(t *testing.T) {
	t.Parallel()
	var loss devstack.AnswerLoss
	s, checks, octocat := codeHostStack(t, false, &loss, func(gh *fakeReviewAPI) {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		gh.routes["GET /repos/Codertocat/Hello-World/contents/.criticizer.yaml"] = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("ref") != ghBaseSHA {
				http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/vnd.github.raw+json")
			_, _ = w.Write([]byte("code_host_status: off\n"))
		}
	})
	j := s.accepted(s.push("opened-x3", githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)), 1, job.StatusSucceeded)
	id := channel.PostID(channel.VersionKeyOf("github", ghChangelist, 1), "github-status", channel.Finished)
	var fin channel.Row
	eventually(t, 60*time.Second, "the finished post settled", func() bool {
		r, err := dynamo.NewPosts(s.fns.Base.DynamoDB, s.res.DeliveriesTable, time.Now).GetPost(context.Background(), id)
		fin = r
		return err == nil && r.Status.Done()
	})
	if !fin.Post.StatusOff {
		t.Fatalf("the finished post %+v does not carry the repository's setting", fin.Post)
	}
	time.Sleep(2 * time.Second)
	if st := checks.Statuses(xs[3]); len(st) > 0 {
		t.Fatalf("statuses %+v; want none", st)
	}
	if len(j.Deliveries) == 0 {
		t.Fatalf("job %+v has no deliveries", j)
	}
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 1 {
		t.Fatalf("%d emails; want 1", n)
	}
}
