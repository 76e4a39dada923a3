package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// quietSample is sample with the generic opt-in to the quiet rules
// ("quiet": true) when quiet is set.
func quietSample(t *testing.T, cl string, version int, quiet bool, recipients ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sample(t, cl, version, recipients...), &m); err != nil {
		t.Fatal(err)
	}
	if quiet {
		m["quiet"] = true
	}
	b, _ := json.Marshal(m)
	return b
}

// A generic caller's v3 then v4 with the same diff, with the quiet rules
// at the deploy's defaults: v4 is the caller's explicit rerun, so each
// recipient gets two emails, one per version, and both jobs succeed with
// every row sent. The same two versions with v4 opting in to the quiet
// rules ("quiet": true) mail each recipient once: v4's rows are settled
// skipped_same_diff, naming v3, and its job succeeds.
// Rules: R-RERUN-2, R-RERUN-1, R-OUTBOX-8, R-QUIET-1.
func TestExplicitRerun_SameDiffMailedAgain_QuietOptInIsNot(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, quietly(0))
	rcpt := []string{"ann@example.com", "bo@example.com"}
	for _, c := range []struct {
		name       string
		quietV4    bool
		wantEmails int
	}{{"explicit", false, 2}, {"quiet-opt-in", true, 1}} {
		cl := testenv.Prefix(t) + "-" + c.name
		clKey := job.ChangelistKey("generic", cl)
		v3 := accept(t, s, "v3-"+cl, quietSample(t, cl, 3, false, rcpt...))
		s.waitJob(v3, 30*time.Second, job.StatusSucceeded)
		v4 := accept(t, s, "v4-"+cl, quietSample(t, cl, 4, c.quietV4, rcpt...))
		s.waitJob(v4, 30*time.Second, job.StatusSucceeded)
		time.Sleep(time.Second) // let any wrong extra send land in the store
		emails := emailsFor(t, s.env.SES, cl)
		for _, r := range rcpt {
			if n := perRecipient(emails)[r]; n != c.wantEmails {
				t.Errorf("%s: %s got %d emails, want %d", c.name, r, n, c.wantEmails)
			}
			row, err := s.fns.Deliveries.Get(context.Background(), delivery.ID(clKey, r, 4))
			switch {
			case err != nil:
				t.Errorf("%s: %s's v4 row: %v", c.name, r, err)
			case !c.quietV4 && (row.Status != delivery.StatusSent && row.Status != delivery.StatusDelivered):
				t.Errorf("%s: %s's v4 row %s %q, want sent: an explicit rerun is mailed whatever its diff", c.name, r, row.Status, row.SkipReason)
			case c.quietV4 && (row.Status != delivery.StatusSkippedSameDiff || row.SkipReason != "same diff as v3"):
				t.Errorf("%s: %s's v4 row %s %q, want skipped_same_diff as v3", c.name, r, row.Status, row.SkipReason)
			}
		}
	}
}

// A GitHub synchronize whose diff is the one already reviewed (a
// force-push of the same change, a rebase that changed nothing) is a
// version Criticizer derives from the code host's event: quiet. The
// reviewer mailed v1 gets no second email; v2's row says it is v1's diff,
// and v2's job succeeds.
// Rules: R-QUIET-1, R-RERUN-2.
func TestGitHubSynchronize_SameDiff_NoSecondEmail(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat := "octocat@" + domain
	gh := newFakeReviewAPI(t)
	// The same diff whatever the head commit.
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	s := startStack(t, devstack.FunctionOptions{}, quietly(0), func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
	})
	resp, b := s.postGitHub("pull_request", "delivery-opened-"+domain, githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)
	resp, b = s.postGitHub("pull_request", "delivery-sync-"+domain, githubPayload(t, "pull_request.synchronize.json", newHeadSHA), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	v2 := decodeAccepted(t, b)
	if v2.ReviewVersion != 2 {
		t.Fatalf("synchronize: %s, want version 2", b)
	}
	s.waitJob(v2.JobID, 30*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second)
	if n := len(emailsTo(t, s.env.SES, octocat)); n != 1 {
		t.Fatalf("octocat got %d emails, want 1: the synchronize had the same diff", n)
	}
	row := s.deliveryRow(delivery.ID(job.ChangelistKey("github", ghChangelist), octocat, 2))
	if row.Status != delivery.StatusSkippedSameDiff || row.SkipReason != "same diff as v1" || row.Attempts != 0 {
		t.Errorf("octocat's v2 row: %s %q after %d attempts, want skipped_same_diff as v1, never claimed", row.Status, row.SkipReason, row.Attempts)
	}
}

// A version is superseded only by one that reaches the recipient. v1 and
// v2 (both opting in to the quiet rules) are accepted within the collapse
// window; v2's diff is served only once v1's notify has looked at the
// changelist, so v2 is still being fetched then. v1's rows wait for it.
// Then v2's model run is refused by the changelist's budget (one run an
// hour, v1's): v1 is mailed to each recipient, exactly once, and its job
// succeeds. (Before the rule, v1 was settled superseded by v2 at that
// look, and nobody was mailed.)
// Rules: R-QUIET-3, R-BUDGET-1, R-OUTBOX-8.
func TestQuiet_NewerRefusedByBudgetAfterTheCheck_OlderMailedOnce(t *testing.T) {
	t.Parallel()
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	release := make(chan struct{})
	var once sync.Once
	diffs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var m map[string]any
		_ = json.Unmarshal(sample(t, "x", 1), &m)
		_, _ = w.Write([]byte(m["diff"].(string) + "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n"))
	}))
	t.Cleanup(func() { once.Do(func() { close(release) }); diffs.Close() })
	const window = 3 * time.Second
	s := startStack(t, devstack.FunctionOptions{}, quietly(window), func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
		c.Budgets.ModelRunsPerChangelistHour = 1
	})
	cl := testenv.Prefix(t)
	rcpt := []string{"ann@example.com", "bo@example.com"}
	v1 := accept(t, s, "v1-"+cl, quietSample(t, cl, 1, true, rcpt...))
	var m map[string]any
	_ = json.Unmarshal(quietSample(t, cl, 2, true, rcpt...), &m)
	delete(m, "diff")
	m["diff_url"] = diffs.URL + "/v2.diff"
	b, _ := json.Marshal(m)
	v2 := accept(t, s, "v2-"+cl, b)

	// v1's notify looks at the changelist once the window has passed: it
	// either leaves its rows waiting for v2 or (the rule before) settles
	// them superseded. Only then is v2's diff served.
	eventually(t, 30*time.Second, "v1's notify to look at v2", func() bool {
		logs := s.logText()
		return countLines(logs, string(v1), "deliveries wait for a newer version") > 0 ||
			countLines(logs, string(v1), "delivery settled quietly") > 0
	})
	once.Do(func() { close(release) })
	s.waitJob(v2, 30*time.Second, job.StatusBudgetExceeded)
	s.waitJob(v1, 60*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second)
	emails := emailsFor(t, s.env.SES, cl)
	for _, r := range rcpt {
		if n := perRecipient(emails)[r]; n != 1 {
			t.Errorf("%s got %d emails, want 1 (v1)", r, n)
		}
	}
	for _, e := range emails {
		if versionOf(e) != 1 {
			t.Errorf("an email about v%d, want only v1's", versionOf(e))
		}
	}
	for _, r := range rcpt {
		row, err := s.fns.Deliveries.Get(context.Background(), delivery.ID(job.ChangelistKey("generic", cl), r, 1))
		if err != nil || (row.Status != delivery.StatusSent && row.Status != delivery.StatusDelivered) || row.Attempts != 1 {
			t.Errorf("%s's v1 row: %s %q after %d attempts (%v), want sent once", r, row.Status, row.SkipReason, row.Attempts, err)
		}
	}
	if strings.Contains(s.logText(), `"status":"superseded"`) {
		t.Error("a row was settled superseded by a version that never reached its recipient")
	}
}
