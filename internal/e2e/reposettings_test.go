package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// TestRepoSettings_IgnoreSkipLabelAndWarning is end to end for a
// repository's .criticizer.yaml on GitHub, read at each version's base
// (the base commit its event names) through the contents API: version 1's
// base's file ignores hello.go, and the email says so; version 2's skips
// the label "bug", which the synchronize payload carries and which its
// author, with read access only, cannot have set, so it is not reviewed
// and nobody is mailed; version 3's has an unknown key, so it is
// reviewed with defaults and GET /jobs says why. Version 4, on version
// 2's base with the same label, comes after the author was given write
// access: they could have labelled their own pull request, so it is
// reviewed and mailed, the job saying why skip_labels did not apply (on
// main it was skipped).
// Rules: R-REPO-1, R-REPO-2, R-REPO-4, R-REPO-7.
func TestRepoSettings_IgnoreSkipLabelAndWarning(t *testing.T) {
	t.Parallel()
	const (
		v3SHA  = "5b1f0f6e0c4d7d2f9e3a8b7c6d5e4f3a2b1c0d9e"
		v2Base = "2a2b2c2d2e2f303132333435363738393a3b3c3d"
		v3Base = "3a3b3c3d3e3f404142434445464748494a4b4c4d"
	)
	domain := testenv.Prefix(t) + ".example.com"
	octocat := "octocat@" + domain
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json"))
	gh.githubReviewsAndTeams(t, "[]", 404)
	files := map[string]string{
		ghBaseSHA: "ignore: [\"hello.go\"]\n",
		v2Base:    "skip_labels: [bug]\n",
		v3Base:    "ignore: [\"hello.go\"]\nnotify_everyone: true\n",
	}
	gh.mu.Lock()
	gh.routes["GET /repos/Codertocat/Hello-World/contents/.criticizer.yaml"] = func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Query().Get("ref")]
		if !ok {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.github.raw+json")
		w.Write([]byte(f))
	}
	// The author's role on the repository (GET …/collaborators/{login}/permission).
	role := "read"
	gh.routes["GET /repos/Codertocat/Hello-World/collaborators/Codertocat/permission"] = func(w http.ResponseWriter, _ *http.Request) {
		gh.mu.Lock()
		r := role
		gh.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"permission":%q,"role_name":%q,"user":{"login":"Codertocat","id":21031067,"type":"User","site_admin":false}}`, r, r)
	}
	gh.mu.Unlock()
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
	})

	resp, b := s.postGitHub("pull_request", "settings-opened", githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	emails := emailsTo(t, s.env.SES, octocat)
	if len(emails) != 1 || !strings.Contains(emails[0].Body.Text, "Not reviewed: hello.go (ignored by .criticizer.yaml).") {
		t.Fatalf("%d emails; want one saying hello.go was ignored:\n%v", len(emails), emails)
	}
	if len(v1.SettingsWarnings) != 0 || v1.Skipped != "" {
		t.Fatalf("v1: warnings %q, skipped %q", v1.SettingsWarnings, v1.Skipped)
	}

	resp, b = s.postGitHub("pull_request", "settings-sync", githubPayloadAt(t, "pull_request.synchronize.json", newHeadSHA, v2Base), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	v2 := s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	if !strings.Contains(v2.Skipped, `the label "bug" is in skip_labels`) || len(v2.Deliveries) != 0 {
		t.Fatalf("v2: skipped %q, deliveries %+v; want skipped for its label, nobody mailed", v2.Skipped, v2.Deliveries)
	}

	resp, b = s.postGitHub("pull_request", "settings-sync-3", githubPayloadAt(t, "pull_request.opened.json", v3SHA, v3Base), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("v3: %d %s", resp.StatusCode, b)
	}
	v3 := s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	if w := strings.Join(v3.SettingsWarnings, " "); !strings.Contains(w, `unknown key "notify_everyone"`) || !strings.Contains(w, "ran with defaults") {
		t.Fatalf("v3 warnings %q", v3.SettingsWarnings)
	}
	emails = emailsTo(t, s.env.SES, octocat)
	if len(emails) != 2 || strings.Contains(emails[1].Body.Text, "ignored by .criticizer.yaml") {
		t.Fatalf("%d emails; v3 should be mailed, reviewed with defaults", len(emails))
	}

	gh.mu.Lock()
	role = "write"
	gh.mu.Unlock()
	const v4SHA = "6c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
	resp, b = s.postGitHub("pull_request", "settings-sync-4", githubPayloadAt(t, "pull_request.synchronize.json", v4SHA, v2Base), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("v4: %d %s", resp.StatusCode, b)
	}
	v4 := s.waitJob(decodeAccepted(t, b).JobID, 30*time.Second, job.StatusSucceeded)
	if v4.Skipped != "" || !strings.Contains(strings.Join(v4.SettingsWarnings, " "), "may set labels") {
		t.Fatalf("v4: skipped %q, warnings %q; want reviewed, saying the author may set labels", v4.Skipped, v4.SettingsWarnings)
	}
	if emails = emailsTo(t, s.env.SES, octocat); len(emails) != 3 {
		t.Fatalf("%d emails; v4 should be mailed", len(emails))
	}
	for _, r := range gh.requests() {
		if ref := r.URL.Query().Get("ref"); strings.HasSuffix(r.URL.Path, "/.criticizer.yaml") && ref != ghBaseSHA && ref != v2Base && ref != v3Base {
			t.Errorf("settings read elsewhere than at a version's base: %s", r.URL)
		}
	}
}
