package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// These tests push heads to a pull request and deliver their webhooks
// late, out of order and at once, as GitHub may: versions follow the
// order of the commits, not of the deliveries (R-SOURCE-6). The GitHub
// stand-in answers the compare API from a commit history, and every head
// adds a file named after it (x5.go), so an email says whose version it
// reviews.

// Heads of the pull request, each pushed on the one before.
var xs = map[int]string{
	3: "3333333333333333333333333333333333333333", 4: "4444444444444444444444444444444444444444",
	5: "5555555555555555555555555555555555555555", 6: "6666666666666666666666666666666666666666",
	7: "7777777777777777777777777777777777777777", 8: "8888888888888888888888888888888888888888",
	9: "9999999999999999999999999999999999999999",
}

// headFile is the file a head's diff adds.
func headFile(sha string) string { return "x" + sha[:1] + ".go" }

// pushes is the stand-in's history: ghBaseSHA, then x3, x4, … each on the
// one before, plus extra (commit → parent) for rewritten ones.
func pushes(extra map[string]string) map[string]string {
	h := map[string]string{ghBaseSHA: ""}
	prev := ghBaseSHA
	for i := 3; i <= 9; i++ {
		h[xs[i]], prev = prev, xs[i]
	}
	for c, p := range extra {
		h[c] = p
	}
	return h
}

// versionsStack is a stack whose GitHub stand-in serves history, each
// head's diff adding its own file, and octocat as the reviewer.
func versionsStack(t *testing.T, history map[string]string) (*stack, *fakeReviewAPI, string) {
	t.Helper()
	octocat := "octocat@" + testenv.Prefix(t) + ".example.com"
	gh := newFakeReviewAPI(t)
	gh.githubCompare(func(_, head string) []byte {
		return []byte(gitDiff([]addedFile{{headFile(head), []string{"package x", "// TODO: the change at " + head[:7]}}}))
	}, history)
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
	})
	return s, gh, octocat
}

// syncPayload is a synchronize: the pull request's head moved from
// before to head.
func syncPayload(t *testing.T, head, before string) []byte {
	return editJSON(t, githubPayloadAt(t, "pull_request.synchronize.json", head, ghBaseSHA), func(m map[string]any) {
		m["before"], m["after"] = before, head
	})
}

// pushAnswer is what intake answered a push.
type pushAnswer struct {
	status int
	body   string
	acc    api.Accepted
	// stale is the body of a stale answer (api.StaleHead), as a sender
	// reads it.
	stale struct {
		Status         string `json:"status"`
		ChangelistID   string `json:"changelist_id"`
		CurrentVersion int    `json:"current_version"`
	}
}

func (s *stack) push(delivery string, body []byte) pushAnswer {
	s.t.Helper()
	resp, b := s.postGitHub("pull_request", delivery, body, ghSecret)
	a := pushAnswer{status: resp.StatusCode, body: string(b)}
	_ = json.Unmarshal(b, &a.acc)
	_ = json.Unmarshal(b, &a.stale)
	return a
}

// accepted fails unless the push started version v (0: any), and waits
// for its job to end as want.
func (s *stack) accepted(a pushAnswer, v int, want job.Status) api.JobView {
	s.t.Helper()
	if a.status != http.StatusAccepted || a.acc.JobID == "" || (v > 0 && a.acc.ReviewVersion != v) {
		s.t.Fatalf("push answered %d %s; want 202, version %d", a.status, a.body, v)
	}
	return s.waitJob(a.acc.JobID, 60*time.Second, want)
}

// staleAnswer fails unless the push was answered stale (200), behind
// version current.
func (s *stack) staleAnswer(a pushAnswer, current int) {
	s.t.Helper()
	if a.status != http.StatusOK || a.stale.Status != "stale" || a.stale.CurrentVersion != current || a.stale.ChangelistID != ghChangelist {
		s.t.Fatalf("push answered %d %s; want 200 stale, current version %d", a.status, a.body, current)
	}
}

// mailedHeads is, per version emailed to rcpt, the head whose file the
// email reviews ("" for none, "?" for several).
func mailedHeads(t *testing.T, s *stack, rcpt string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, e := range emailsTo(t, s.env.SES, rcpt) {
		v := versionOf(e)
		if _, twice := out[v]; twice {
			t.Fatalf("version %d mailed to the reviewer twice", v)
		}
		out[v] = ""
		// Each head's diff holds only its own file: the files of the
		// versions before it are listed as resolved, after its own.
		text, _, _ := strings.Cut(e.Body.Text, "Resolved since version")
		for i, sha := range xs {
			if strings.Contains(text, headFile(sha)) {
				if out[v] != "" {
					out[v] = "?"
				} else {
					out[v] = fmt.Sprint(i)
				}
			}
		}
		for _, sha := range []string{ya, yb} {
			if strings.Contains(text, headFile(sha)) {
				out[v] = sha[:1]
			}
		}
	}
	return out
}

// newest is the newest version mailed and whose head it reviews.
func newest(mailed map[int]string) (int, string) {
	vs := make([]int, 0, len(mailed))
	for v := range mailed {
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return 0, ""
	}
	v := slices.Max(vs)
	return v, mailed[v]
}

// TestGitHubPushesLateAndOutOfOrder_VersionsFollowTheCommits: the pull
// request is opened at x3 (one email); x5's synchronize comes before x4's
// (its `before` names x4), then x4's, late: x4 is answered stale, mails no
// one, and the newest email is x5's, whose job succeeded. Then x8's push
// (its before, x7, unknown) is a version the fetch stage orders with the
// compare API (ahead of x5: mailed); x6's, late, names x5 as its before —
// a head intake has versioned, not the newest — so it is a version the
// compare API places behind x8: skipped, mailed to no one; and x7's, which
// x8 named, is stale. Three emails: x3's, x5's, x8's.
//
// Fails before R-SOURCE-6: x4 got version 3 and was mailed after x5 (and
// x6, x7 versions 5 and 6, the newest email being x7's).
// Rules: R-SOURCE-6, R-QUIET-3.
func TestGitHubPushesLateAndOutOfOrder_VersionsFollowTheCommits(t *testing.T) {
	t.Parallel()
	s, _, octocat := versionsStack(t, pushes(nil))

	opened := githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)
	s.accepted(s.push("opened-x3", opened), 1, job.StatusSucceeded)
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 1 {
		t.Fatalf("%d emails after the open, want 1", n)
	}
	x5 := s.accepted(s.push("sync-x5", syncPayload(t, xs[5], xs[4])), 2, job.StatusSucceeded)
	s.staleAnswer(s.push("sync-x4", syncPayload(t, xs[4], xs[3])), 2)
	// The same late delivery again (an operator's redelivery keeps its
	// id): the same answer.
	s.staleAnswer(s.push("sync-x4", syncPayload(t, xs[4], xs[3])), 2)
	time.Sleep(time.Second)
	mailed := mailedHeads(t, s, octocat)
	if v, head := newest(mailed); len(mailed) != 2 || v != 2 || head != "5" || x5.Skipped != "" {
		t.Fatalf("emails by version %v (x5's job skipped %q); want v1 (x3) and v2, the newest, x5's", mailed, x5.Skipped)
	}

	// x8, whose before (x7) intake has not seen: ordered by the compare
	// API at fetch, ahead of x5.
	s.accepted(s.push("sync-x8", syncPayload(t, xs[8], xs[7])), 3, job.StatusSucceeded)
	// x6, late, after x5 (versioned, not the newest): behind x8, skipped.
	x6 := s.accepted(s.push("sync-x6", syncPayload(t, xs[6], xs[5])), 4, job.StatusSucceeded)
	if x6.Skipped == "" || len(x6.Deliveries) != 0 {
		t.Fatalf("x6's job: skipped %q, %d deliveries; want skipped as behind, none", x6.Skipped, len(x6.Deliveries))
	}
	s.staleAnswer(s.push("sync-x7", syncPayload(t, xs[7], xs[6])), 4)
	time.Sleep(2 * time.Second)
	mailed = mailedHeads(t, s, octocat)
	if v, head := newest(mailed); len(mailed) != 3 || v != 3 || head != "8" || mailed[1] != "3" || mailed[2] != "5" {
		t.Fatalf("emails by version %v; want x3's, x5's and x8's, the newest", mailed)
	}
	if n := countKind(s.scanAll(s.res.JobsTable), "job"); n != 4 {
		t.Fatalf("%d jobs, want 4 (x3, x5, x8, x6 skipped)", n)
	}
}

// TestGitHubTwoPushesAtOnce_TheNewestEmailIsTheHeads: three times, two
// pushes' webhooks (x4 then x5; x6 then x7; x8 then x9) are posted at
// the same time, the newer first: the newer is never refused, and the
// newest email is always the pull request's head's.
//
// Fails before R-SOURCE-6 whenever the newer push draws the lower number
// (it is posted first, and mostly does): the older is then the newest
// version, mailed last — or the newer is refused 409 when the older's job
// is created first. It passes there only if every pair races the other
// way.
// Rules: R-SOURCE-6.
func TestGitHubTwoPushesAtOnce_TheNewestEmailIsTheHeads(t *testing.T) {
	t.Parallel()
	s, _, octocat := versionsStack(t, pushes(nil))
	s.accepted(s.push("opened-x3", githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)), 1, job.StatusSucceeded)
	for _, pair := range [][2]int{{4, 5}, {6, 7}, {8, 9}} {
		older, newer := pair[0], pair[1]
		var a [2]pushAnswer
		var wg sync.WaitGroup
		wg.Go(func() { a[1] = s.push(fmt.Sprint("sync-x", newer), syncPayload(t, xs[newer], xs[older])) })
		wg.Go(func() { a[0] = s.push(fmt.Sprint("sync-x", older), syncPayload(t, xs[older], xs[older-1])) })
		wg.Wait()
		if a[1].status != http.StatusAccepted {
			t.Fatalf("x%d, the newer, answered %d %s; want 202", newer, a[1].status, a[1].body)
		}
		for _, x := range a {
			if x.status == http.StatusAccepted {
				s.waitJob(x.acc.JobID, 60*time.Second, job.StatusSucceeded)
			}
		}
		time.Sleep(time.Second)
		mailed := mailedHeads(t, s, octocat)
		if v, head := newest(mailed); v != a[1].acc.ReviewVersion || head != fmt.Sprint(newer) {
			t.Fatalf("x%d and x%d at once: emails by version %v; want the newest, v%d, x%d's (x%d answered %d %s)",
				older, newer, mailed, a[1].acc.ReviewVersion, newer, older, a[0].status, a[0].body)
		}
	}
}

// Heads of a rewritten branch: ya rewrites x4 on x3, yb follows ya.
const (
	ya = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	yb = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestGitHubForcePush_DivergedHeadIsANewVersion: opened at x3, pushed to
// x4 (two emails); then the branch is rewritten (ya replaces x4, a
// force-push) and pushed to (yb). yb's webhook comes first, naming ya,
// unknown: the compare API says yb diverged from x4 — a new version,
// mailed. ya's own webhook, late, is stale: yb named it.
//
// Fails before R-SOURCE-6: ya got the version after yb's and was mailed
// last.
// Rules: R-SOURCE-6.
func TestGitHubForcePush_DivergedHeadIsANewVersion(t *testing.T) {
	t.Parallel()
	s, gh, octocat := versionsStack(t, pushes(map[string]string{ya: xs[3], yb: ya}))
	s.accepted(s.push("opened-x3", githubPayloadAt(t, "pull_request.opened.json", xs[3], ghBaseSHA)), 1, job.StatusSucceeded)
	s.accepted(s.push("sync-x4", syncPayload(t, xs[4], xs[3])), 2, job.StatusSucceeded)
	s.accepted(s.push("sync-yb", syncPayload(t, yb, ya)), 3, job.StatusSucceeded)
	s.staleAnswer(s.push("force-ya", syncPayload(t, ya, xs[4])), 3)
	time.Sleep(time.Second)
	mailed := mailedHeads(t, s, octocat)
	if v, head := newest(mailed); len(mailed) != 3 || v != 3 || head != "b" {
		t.Fatalf("emails by version %v; want x3's, x4's and the newest, yb's", mailed)
	}
	asked := false
	for _, r := range gh.requests() {
		asked = asked || (r.URL.Path == "/repos/Codertocat/Hello-World/compare/"+xs[4]+"..."+yb && strings.Contains(r.Header.Get("Accept"), "json"))
	}
	if !asked {
		t.Fatal("yb was not compared with x4, the version before it")
	}
}

// TestGitLabPushesLateAndOutOfOrder_VersionsFollowTheMergeRequests: a
// merge request opened at its recorded head (one email); g3's update,
// whose oldrev (g2) intake has not seen, comes first: a version the fetch
// stage orders by the merge request's versions (g3's is later than the
// recorded head's), mailed; g2's own update, late, is stale: g3 named it.
// The GitLab stand-in lists the versions as GitLab's REST reference
// shows them (newest first, each with its id and head_commit_sha).
//
// Fails before R-SOURCE-6: g2 got version 3 and was mailed after g3.
// Rules: R-SOURCE-6.
func TestGitLabPushesLateAndOutOfOrder_VersionsFollowTheMergeRequests(t *testing.T) {
	t.Parallel()
	const (
		recorded = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7" // the recorded hooks' last_commit
		g2       = "2222222222222222222222222222222222222222"
		g3       = "3333333333333333333333333333333333333333"
	)
	user1 := "user1@" + testenv.Prefix(t) + ".example.com"
	gl := newFakeReviewAPI(t)
	mr := "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
	gl.gitlabVersion(t, mr, g2, g3) // 201 g3, 200 g2, 110 the recorded head
	gl.on("GET "+mr+"/reviewers", "application/json", readFile(t, sourceData+"gitlab/reviewers.json"))
	gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
		c.ReviewerDirectory = `{"gitlab": {"user1": "` + user1 + `"}}`
	})
	post := func(uuid string, body []byte) pushAnswer {
		resp, b := s.postHook("/webhooks/gitlab", map[string]string{webhook.GitLabTokenHeader: glToken,
			webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: uuid}, body)
		a := pushAnswer{status: resp.StatusCode, body: string(b)}
		_ = json.Unmarshal(b, &a.acc)
		_ = json.Unmarshal(b, &a.stale)
		return a
	}
	update := func(head, oldrev string) []byte {
		return editJSON(t, readFile(t, webhookData+"gitlab/merge_request.update-push.json"), func(m map[string]any) {
			a := m["object_attributes"].(map[string]any)
			a["oldrev"] = oldrev
			a["last_commit"].(map[string]any)["id"] = head
		})
	}
	s.accepted(post("open", readFile(t, webhookData+"gitlab/merge_request.open.json")), 1, job.StatusSucceeded)
	s.accepted(post("update-g3", update(g3, g2)), 2, job.StatusSucceeded)
	late := post("update-g2", update(g2, recorded))
	if late.status != http.StatusOK || late.stale.Status != "stale" || late.stale.CurrentVersion != 2 {
		t.Fatalf("g2's update, late: %d %s; want 200 stale, current version 2", late.status, late.body)
	}
	time.Sleep(time.Second)
	var versions []int
	for _, e := range emailsTo(t, s.env.SES, user1) {
		versions = append(versions, versionOf(e))
	}
	slices.Sort(versions)
	if !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("user1 got versions %v, want 1 and 2 (g3's)", versions)
	}
	asked := false
	for _, r := range gl.requests() {
		asked = asked || strings.HasSuffix(r.URL.Path, "/merge_requests/1/versions")
	}
	if !asked {
		t.Fatal("the merge request's versions were never read")
	}
}
