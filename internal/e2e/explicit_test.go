package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
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
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2", "text/plain; charset=utf-8", readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	s := startStack(t, devstack.FunctionOptions{}, quietly(0), func(c *config.Config) {
		c.GitHub = config.GitHubConfig{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
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
