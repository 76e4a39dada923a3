package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

const adminKey = "e2e-admin-key-0123456789abcdef0123456789"

// admin sends an admin API request with the key (or with key "" none).
func (s *stack) admin(method, path, key string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// versionsMailed counts, per recipient, the emails whose body names
// review version v of the changelist.
func versionsMailed(t *testing.T, s *stack, cl string) map[string]map[int]int {
	t.Helper()
	out := map[string]map[int]int{}
	for _, e := range emailsFor(t, s.env.SES, cl) {
		for v := 1; v <= 9; v++ {
			if versionOf(e) == v {
				for _, to := range e.Destination.To {
					if out[to] == nil {
						out[to] = map[int]int{}
					}
					out[to][v]++
				}
			}
		}
	}
	return out
}

// R-RERUN-1: "Reprocessing a succeeded job with identical
// review_version is not allowed as a new send operation; it should return
// prior success. Reprocessing is allowed as a versioned rerun only with a
// new review_version (e.g., v3 -> v4), which creates new delivery intents
// under new keys."
//
// POST /admin/rerun is that versioned rerun: a dry run creates nothing and
// lists who would be mailed; a rerun is version +1 and mails each
// recipient exactly once more, under new delivery ids; a second rerun is
// +2; the original webhook repeated still sends nothing.
func TestAdminRerun_DryRunThenVersionPlusOne_EachRecipientOnceMore(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) { c.AdminAPIKey = adminKey })
	ctx := context.Background()
	cl := testenv.Prefix(t)
	rcpt := []string{"ann@example.com", "bo@example.com"}
	body := sample(t, cl, 1, rcpt...)
	v1 := accept(t, s, "v1-"+cl, body)
	s.waitJob(v1, 30*time.Second, job.StatusSucceeded)
	eventually(t, 10*time.Second, "the v1 emails", func() bool { return len(emailsFor(t, s.env.SES, cl)) == 2 })

	// Without the key, or with another: 401; an unknown changelist: 404.
	if code, b := s.admin(http.MethodPost, "/admin/rerun", "", map[string]any{"source": "generic", "changelist_id": cl, "reason": "x"}); code != http.StatusUnauthorized {
		t.Fatalf("no key: %d %s", code, b)
	}
	if code, b := s.admin(http.MethodPost, "/admin/rerun", adminKey+"-not", map[string]any{"source": "generic", "changelist_id": cl, "reason": "x"}); code != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d %s", code, b)
	}
	code, b := s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "generic", "changelist_id": cl + "-unknown", "dry_run": true})
	var p api.Problem
	if code != http.StatusNotFound || json.Unmarshal(b, &p) != nil || p.Field != "changelist_id" {
		t.Fatalf("unknown changelist: %d %s, want 404 naming changelist_id", code, b)
	}

	// Dry run: who would be mailed, nothing created.
	code, b = s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "generic", "changelist_id": cl, "dry_run": true})
	var dry api.RerunPreview
	if code != http.StatusOK || json.Unmarshal(b, &dry) != nil {
		t.Fatalf("dry run: %d %s", code, b)
	}
	wantDry := []api.RecipientDecision{{Recipient: api.MaskEmail("a@example.com"), Decision: "send"}, {Recipient: api.MaskEmail("b@example.com"), Decision: "send"}}
	if !dry.DryRun || dry.LatestJobID != v1 || dry.LatestVersion != 1 || dry.LatestStatus != job.StatusSucceeded || dry.ReviewVersion != 2 || !slices.Equal(dry.Recipients, wantDry) {
		t.Fatalf("dry run: %+v, want v1 -> v2 mailing %v", dry, wantDry)
	}
	if strings.Contains(string(b), "ann@") {
		t.Fatalf("dry run shows a full address: %s", b)
	}
	if v, id, err := s.fns.Jobs.LatestVersion(ctx, "generic", cl); err != nil || v != 1 || id != v1 {
		t.Fatalf("after the dry run the head is %d %s (%v), want v1", v, id, err)
	}
	if _, err := s.fns.Jobs.Get(ctx, job.NewID("generic", cl, 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the dry run created a v2 job: %v", err)
	}

	// The rerun: version 2, each recipient exactly one more email.
	rerun := func(want int) api.RerunAccepted {
		t.Helper()
		code, b := s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "generic", "changelist_id": cl, "reason": "e2e: template fixed"})
		var acc api.RerunAccepted
		if code != http.StatusAccepted || json.Unmarshal(b, &acc) != nil {
			t.Fatalf("rerun: %d %s", code, b)
		}
		if acc.ReviewVersion != want || acc.JobID != job.NewID("generic", cl, want) || acc.Status != "accepted" ||
			!slices.Equal(acc.Recipients, []string{api.MaskEmail("a@example.com"), api.MaskEmail("b@example.com")}) || acc.Links.Self != s.jobLink(acc.JobID) {
			t.Fatalf("rerun: %s, want version %d", b, want)
		}
		s.waitJob(acc.JobID, 30*time.Second, job.StatusSucceeded)
		for _, r := range rcpt {
			// The rerun's rows are new ones, under the new version's keys.
			if row, err := s.fns.Deliveries.Get(context.Background(), delivery.ID(job.ChangelistKey("generic", cl), r, want)); err != nil || row.ReviewVersion != want || row.NotifiedAt.IsZero() {
				t.Fatalf("rerun v%d: %s's row %+v %v, want a sent row of v%d", want, r, row.Status, err, want)
			}
		}
		return acc
	}
	r2 := rerun(2)
	if r2.RerunOf != v1 {
		t.Fatalf("rerun of %s, want %s", r2.RerunOf, v1)
	}
	eventually(t, 10*time.Second, "the v2 emails", func() bool { return len(emailsFor(t, s.env.SES, cl)) >= 4 })
	rerun(3)
	eventually(t, 10*time.Second, "the v3 emails", func() bool { return len(emailsFor(t, s.env.SES, cl)) >= 6 })

	// The original webhook again (GitHub-style redelivery: same key, same
	// body): the stored answer, nothing sent.
	resp, again := s.post("v1-"+cl, body)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(again), string(v1)) {
		t.Fatalf("repeated webhook: %d %s", resp.StatusCode, again)
	}
	time.Sleep(1500 * time.Millisecond)
	got := versionsMailed(t, s, cl)
	for _, r := range rcpt {
		if got[r][1] != 1 || got[r][2] != 1 || got[r][3] != 1 || len(got[r]) != 3 {
			t.Errorf("%s got %v emails per version, want exactly one each of v1, v2, v3", r, got[r])
		}
	}
	if n := len(emailsFor(t, s.env.SES, cl)); n != 6 {
		t.Errorf("%d emails in all, want 6", n)
	}
	if strings.Contains(s.logText(), adminKey) {
		t.Error("the admin key reached the log")
	}
}

// A rerun of a code review system's changelist goes through fetch again
// with the same source reference (the same head commit): the reviewer with
// an address is mailed once more under the new version, the one without
// stays skipped_no_email (and the dry run says so); GitHub's versions come
// from a per-changelist counter, so a commit pushed after the rerun gets a
// higher version than the rerun took, and is reviewed (R-RERUN-1).
func TestAdminRerun_GitHub_RefetchesSameCommit_NextPushStillReviewed(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	octocat := "octocat@" + domain
	gh := newFakeReviewAPI(t)
	gh.githubDiff(readFile(t, sourceData+"github/pull.diff"))
	gh.on("GET /repos/Codertocat/Hello-World/pulls/2/requested_reviewers", "application/json; charset=utf-8",
		readFile(t, sourceData+"github/requested_reviewers.json")) // octocat and hubot, and a team
	gh.githubReviewsAndTeams(t, "[]", 404) // nobody reviewed yet; the team hidden from the token
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitHub = config.GitHub{WebhookSecret: ghSecret, Token: "e2e-github-api-token", APIURL: gh.srv.URL}
		c.ReviewerDirectory = `{"github": {"octocat": "` + octocat + `"}}`
		c.AdminAPIKey = adminKey
	})
	resp, b := s.postGitHub("pull_request", "delivery-opened-1", githubPayload(t, "pull_request.opened.json", ""), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("opened: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.waitJob(v1.JobID, 30*time.Second, job.StatusSucceeded)

	code, b := s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "github", "changelist_id": ghChangelist, "dry_run": true})
	var dry api.RerunPreview
	want := []api.RecipientDecision{{Recipient: api.MaskEmail("o@" + domain), Decision: "send"}, {Recipient: "github:h***", Decision: "skipped_no_email"}}
	if code != http.StatusOK || json.Unmarshal(b, &dry) != nil || dry.ReviewVersion != 2 || !slices.Equal(dry.Recipients, want) {
		t.Fatalf("dry run: %d %s, want version 2 and %v", code, b, want)
	}
	code, b = s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "github", "changelist_id": ghChangelist, "reason": "e2e"})
	var acc api.RerunAccepted
	if code != http.StatusAccepted || json.Unmarshal(b, &acc) != nil || acc.ReviewVersion != 2 {
		t.Fatalf("rerun: %d %s, want 202 version 2", code, b)
	}
	s.waitJob(acc.JobID, 30*time.Second, job.StatusSucceeded)
	clKey := job.ChangelistKey("github", ghChangelist)
	if r := s.deliveryRow(delivery.ID(clKey, octocat, 2)); r.NotifiedAt.IsZero() {
		t.Errorf("octocat's v2 row: %+v, want sent", r)
	}
	if r := s.deliveryRow(delivery.ID(clKey, "github:hubot", 2)); r.Status != delivery.StatusSkippedNoEmail {
		t.Errorf("hubot's v2 row: %+v, want skipped_no_email", r)
	}
	eventually(t, 10*time.Second, "octocat's second email", func() bool { return len(emailsTo(t, s.env.SES, octocat)) >= 2 })

	// New commits pushed after the rerun: version 3, reviewed and mailed.
	resp, b = s.postGitHub("pull_request", "delivery-sync-1", githubPayload(t, "pull_request.synchronize.json", newHeadSHA), ghSecret)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("synchronize: %d %s", resp.StatusCode, b)
	}
	v3 := decodeAccepted(t, b)
	if v3.ReviewVersion != 3 {
		t.Fatalf("synchronize after the rerun: %s, want version 3", b)
	}
	s.waitJob(v3.JobID, 30*time.Second, job.StatusSucceeded)
	time.Sleep(1500 * time.Millisecond)
	emails := emailsTo(t, s.env.SES, octocat)
	versions := map[int]int{}
	for _, e := range emails {
		versions[versionOf(e)]++
	}
	if len(emails) != 3 || versions[1] != 1 || versions[2] != 1 || versions[3] != 1 {
		t.Fatalf("octocat's emails by version %v, want v1, v2 (rerun) and v3 (new commit), one each", versions)
	}
}

// R-MAIL-1: "GET /admin/previews and GET /admin/previews/{template}
// rendering each template with sample data", through the local API with
// the real renderer; and a dry run reports the decision notify's gate will
// take for an unsubscribed recipient.
func TestAdminPreviews_RenderEveryTemplate_DryRunShowsUnsubscribed(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) { c.AdminAPIKey = adminKey })
	code, b := s.admin(http.MethodGet, "/admin/previews", adminKey, nil)
	var list struct {
		Templates []struct{ Name, URL string } `json:"templates"`
	}
	if err := json.Unmarshal(b, &list); code != 200 || err != nil || len(list.Templates) < 3 {
		t.Fatalf("GET /admin/previews: %d %s", code, b)
	}
	for _, tpl := range list.Templates {
		req, _ := http.NewRequest(http.MethodGet, s.srv.URL+tpl.URL, nil)
		req.Header.Set("X-Api-Key", adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != 200 || len(body) < 200 {
			t.Fatalf("%s: %d, %d bytes", tpl.URL, resp.StatusCode, len(body))
		}
		if strings.HasSuffix(tpl.Name, ".html") && (!strings.HasPrefix(ct, "text/html") || !strings.Contains(string(body), "</html>")) {
			t.Fatalf("%s: %q, not a whole HTML page", tpl.URL, ct)
		}
		if strings.HasSuffix(tpl.Name, ".txt") && !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("%s: content type %q", tpl.URL, ct)
		}
	}
	if code, _ := s.admin(http.MethodGet, "/admin/previews/critique/v0.html", adminKey, nil); code != http.StatusNotFound {
		t.Fatalf("unknown template: %d, want 404", code)
	}

	cl := "octo/dry#" + strings.TrimPrefix(testenv.Prefix(t), "t")
	j := accept(t, s, "v1-"+cl, sample(t, cl, 1, "ann@example.com", "bo@example.com"))
	s.waitJob(j, 30*time.Second, job.StatusSucceeded)
	if err := s.fns.Recipients.Mute(context.Background(), unsubscribe.RecipientID("ann@example.com"), unsubscribe.Repository("generic", cl)); err != nil {
		t.Fatal(err)
	}
	code, b = s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "generic", "changelist_id": cl, "dry_run": true})
	if code != 200 || !strings.Contains(string(b), `"skipped_unsubscribed"`) || !strings.Contains(string(b), `"send"`) {
		t.Fatalf("dry run: %d %s, want one send and one skipped_unsubscribed", code, b)
	}
}
