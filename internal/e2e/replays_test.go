package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// 200 replays of one signed GitHub reviewer event, on the local stack:
// one reviewer refresh, so one round of GitHub API calls (counted at the
// fake API, not in logs), and the new reviewer mailed once; every other
// replay is answered 202 duplicate.
// Rules: R-BUDGET-3.
func TestGitHubReviewerEventReplayed200Times_OneRefresh(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat, hubot := "octocat@"+domain, "hubot@"+domain
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/reviews", "application/json; charset=utf-8", []byte(`[]`))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		[]byte(`{"users":[{"login":"octocat","type":"User"}],"teams":[]}`))
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `", "hubot": "` + hubot + `"}}`
	})
	clKey := job.ChangelistKey("github", ghChangelist)
	resp, b := s.postGitHub("pull_request", "opened-1", githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.settled(v1.JobID, delivery.ID(clKey, octocat, 1))
	asked := func() int {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		n := 0
		for _, r := range gh.got {
			if strings.HasSuffix(r.URL.Path, "/requested_reviewers") {
				n++
			}
		}
		return n
	}
	before := asked()

	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		[]byte(`{"users":[{"login":"octocat","type":"User"},{"login":"hubot","type":"User"}],"teams":[]}`))
	event := editJSON(t, readFile(t, webhookData+"github/pull_request.review_requested.json"), func(m map[string]any) {
		m["requested_reviewer"].(map[string]any)["login"] = "hubot"
	})
	var dups, handled atomic.Int32
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range 200 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, b := s.postGitHub("pull_request", "requested-hubot", event, ghSecret)
			switch {
			case resp.StatusCode == http.StatusAccepted && strings.Contains(string(b), `"status":"duplicate"`):
				dups.Add(1)
			case resp.StatusCode == http.StatusAccepted && strings.Contains(string(b), `"reviewers_updated"`):
				handled.Add(1)
			default:
				t.Errorf("replay: %d %s", resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	if handled.Load() != 1 || dups.Load() != 199 {
		t.Fatalf("200 replays: %d handled, %d duplicates; want 1 and 199", handled.Load(), dups.Load())
	}
	s.settledRow(delivery.ID(clKey, hubot, 1))
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	time.Sleep(2 * time.Second) // anything more would have run by now
	if n := asked() - before; n != 1 {
		t.Fatalf("GitHub was asked for the requested reviewers %d times after 200 replays, want 1 (one refresh)", n)
	}
	if got := len(emailsTo(t, s.env.SES, hubot)); got != 1 {
		t.Fatalf("hubot got %d emails, want 1", got)
	}
}

// One signed GitHub reviewer event captured and replayed 50 times, each
// under a fresh X-GitHub-Delivery (which GitHub's signature does not
// cover), on the local stack: the first is handled and its refresh runs,
// the 49 replays that follow are answered 202 duplicate, and GitHub is
// asked for the requested reviewers exactly once more than before the
// event (counted at the fake API). A later event that is really new (a
// third reviewer requested) still refreshes, and is what tells the test
// that nothing else was queued before it: its refresh is the second.
// Rules: R-BUDGET-3.
func TestGitHubReviewerEventUnderFreshDeliveryIDs_OneRefresh(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat, hubot, monalisa := "octocat@"+domain, "hubot@"+domain, "monalisa@"+domain
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/reviews", "application/json; charset=utf-8", []byte(`[]`))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		[]byte(`{"users":[{"login":"octocat","type":"User"}],"teams":[]}`))
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `", "hubot": "` + hubot + `", "monalisa": "` + monalisa + `"}}`
	})
	clKey := job.ChangelistKey("github", ghChangelist)
	resp, b := s.postGitHub("pull_request", "opened-1", githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.settled(v1.JobID, delivery.ID(clKey, octocat, 1))
	asked := func() int {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		n := 0
		for _, r := range gh.got {
			if strings.HasSuffix(r.URL.Path, "/requested_reviewers") {
				n++
			}
		}
		return n
	}
	before := asked()

	requested := func(who string) []byte {
		return editJSON(t, readFile(t, webhookData+"github/pull_request.review_requested.json"), func(m map[string]any) {
			m["requested_reviewer"].(map[string]any)["login"] = who
		})
	}
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		[]byte(`{"users":[{"login":"octocat","type":"User"},{"login":"hubot","type":"User"}],"teams":[]}`))
	captured := requested("hubot")
	resp, b = s.postGitHub("pull_request", "fresh-0", captured, ghSecret)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"reviewers_updated"`) {
		t.Fatalf("the event: %d %s", resp.StatusCode, b)
	}
	s.settledRow(delivery.ID(clKey, hubot, 1))
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	if n := asked() - before; n != 1 {
		t.Fatalf("GitHub was asked for the requested reviewers %d times for the event, want 1", n)
	}

	// The refresh has run: a replay taken for a new event now would
	// schedule another.
	var dups atomic.Int32
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 1; i < 50; i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, b := s.postGitHub("pull_request", fmt.Sprintf("fresh-%d", i), captured, ghSecret)
			if resp.StatusCode == http.StatusAccepted && strings.Contains(string(b), `"status":"duplicate"`) {
				dups.Add(1)
			} else {
				t.Errorf("replay under fresh-%d: %d %s", i, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	if dups.Load() != 49 {
		t.Fatalf("49 replays under fresh delivery ids: %d duplicates, want 49", dups.Load())
	}

	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		[]byte(`{"users":[{"login":"octocat","type":"User"},{"login":"hubot","type":"User"},{"login":"monalisa","type":"User"}],"teams":[]}`))
	resp, b = s.postGitHub("pull_request", "monalisa-1", requested("monalisa"), ghSecret)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"reviewers_updated"`) {
		t.Fatalf("a new event after the replays: %d %s", resp.StatusCode, b)
	}
	s.settledRow(delivery.ID(clKey, monalisa, 1))
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	if n := asked() - before; n != 2 {
		t.Fatalf("GitHub was asked for the requested reviewers %d times after the event, 49 replays and one new event; want 2", n)
	}
	for _, rcpt := range []string{octocat, hubot, monalisa} {
		if got := len(emailsTo(t, s.env.SES, rcpt)); got != 1 {
			t.Errorf("%s got %d emails, want 1", rcpt, got)
		}
	}
}
