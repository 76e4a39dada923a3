package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// These tests try, as a change's author would, to lower a review with
// what the author controls beyond the diff: a change of their own
// stacked under the one reviewed, and labels they may set. Settings and
// exemptions come only from code already merged (R-REPO-6), and a label
// skips only when its author could not have set it (R-REPO-7).

// startGerrit starts a stack whose Gerrit is gr.
func startGerrit(t *testing.T, gr *fakeReviewAPI) *stack {
	return startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.Gerrit = config.Gerrit{WebhookToken: gerritToken, APIURL: gr.srv.URL, Username: "criticizer", Password: "http-password"}
	})
}

// postGerrit posts a Gerrit event and returns the job it accepted.
func (s *stack) postGerrit(body []byte) job.ID {
	s.t.Helper()
	resp, b := s.postHook("/webhooks/gerrit?token="+gerritToken, nil, body)
	if resp.StatusCode != http.StatusAccepted {
		s.t.Fatalf("gerrit event: %d %s", resp.StatusCode, b)
	}
	return decodeAccepted(s.t, b).JobID
}

// A Gerrit stack: change 1, the author's own and not merged, adds a
// .criticizer.yaml that skips its author; change 2 is made on it (its
// patch set's parent is change 1's commit). Change 2 is reviewed under the
// destination branch's settings — it has none — and its reviewers are
// mailed. The settings were read once, at the branch's tip, never at the
// patch set's parent, and the version's source reference records that
// commit, so a retry reads the same bytes.
// On main the fetch stage read ?parent=1: change 2 was skipped, nobody
// mailed.
// Rules: R-REPO-6, R-REPO-1, R-SOURCE-5.
func TestGerritStack_ParentAddsSettingsSkippingItsAuthor_ChildReviewedAndMailed(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	gr, repo := gerritStandIn(t, domain)
	repo.commit(gerritParent, gerritTip, map[string]string{".criticizer.yaml": "skip_authors: [admin]\n"})
	repo.change(1, "patch_create", 1, gerritParent)
	s := startGerrit(t, gr)

	id := s.postGerrit(readFile(t, webhookData+"gerrit/patchset-created.json"))
	v := s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	if v.Skipped != "" || len(v.SettingsWarnings) != 0 {
		t.Fatalf("skipped %q, warnings %q: the stacked parent's settings applied", v.Skipped, v.SettingsWarnings)
	}
	for _, who := range []string{"john.doe@" + domain, "jane.roe@" + domain} {
		if n := len(emailsTo(t, s.env.SES, who)); n != 1 {
			t.Errorf("%s got %d emails, want 1", who, n)
		}
	}
	want := "/a/projects/TestRepo1/commits/" + gerritTip + "/files/.criticizer.yaml/content?"
	if reads := gr.settingsReadsGerrit(); len(reads) != 1 || reads[0] != want {
		t.Fatalf("settings read at %q; want once, at the branch's tip: %s", reads, want)
	}
	ref, err := s.fns.Jobs.GetSourceRef(context.Background(), id)
	if err != nil || ref.BaseSHA != gerritTip {
		t.Fatalf("source reference base %q, %v; want the tip it read, %s", ref.BaseSHA, err, gerritTip)
	}
}

// A Gerrit hashtag named in the branch's skip_labels skips nothing: a
// change's owner may set hashtags on their own change. The change is
// reviewed and mailed, and the job says why skip_labels did not apply.
// On main the hashtag skipped the change.
// Rules: R-REPO-7, R-REPO-4.
func TestGerrit_HashtagInSkipLabels_StillReviewedAndMailed(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	gr, repo := gerritStandIn(t, domain)
	// Not stacked: the patch set's parent is the branch's tip, which
	// skips the label no-review.
	repo.commit(gerritParent, "", map[string]string{".criticizer.yaml": "skip_labels: [no-review]\n"})
	repo.branch("patch_create", gerritParent)
	repo.change(2, "patch_create", 2, gerritHead, "no-review")
	s := startGerrit(t, gr)

	body := editJSON(t, readFile(t, webhookData+"gerrit/patchset-created.json"), func(m map[string]any) {
		m["change"].(map[string]any)["hashtags"] = []any{"no-review"}
	})
	v := s.waitJob(s.postGerrit(body), 30*time.Second, job.StatusSucceeded)
	if v.Skipped != "" || !strings.Contains(strings.Join(v.SettingsWarnings, " "), "hashtags") {
		t.Fatalf("skipped %q, warnings %q; want reviewed, saying hashtags do not skip", v.Skipped, v.SettingsWarnings)
	}
	for _, who := range []string{"john.doe@" + domain, "jane.roe@" + domain} {
		if n := len(emailsTo(t, s.env.SES, who)); n != 1 {
			t.Errorf("%s got %d emails, want 1", who, n)
		}
	}
}

// GitLab: a label in the target project's skip_labels skips a merge
// request only when its author cannot have set it. Merge request 1's
// author is a Developer of the project (GitLab lets them label their own
// merge request): it is reviewed and mailed, the job saying why. Merge
// request 2's author is no member, and a maintainer added the label: it
// is skipped.
// On main both were skipped.
// Rules: R-REPO-7, R-REPO-4.
func TestGitLabLabel_SkipsOnlyWhenTheAuthorCannotHaveSetIt(t *testing.T) {
	t.Parallel()
	domain := testenv.Prefix(t) + ".example.com"
	user1 := "user1@" + domain
	const project = "/api/v4/projects/gitlabhq%2Fgitlab-test"
	gl := newFakeReviewAPI(t)
	for _, n := range []string{"1", "2"} {
		mr := project + "/merge_requests/" + n
		gl.gitlabVersion(t, mr)
		gl.on("GET "+mr+"/reviewers", "application/json", readFile(t, sourceData+"gitlab/reviewers.json"))
	}
	// Merge request 1 is root's (id 1), a Developer; merge request 2 is
	// user 42's, no member; user 7, a maintainer, labelled both.
	gl.on("GET "+project+"/merge_requests/1", "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
	gl.on("GET "+project+"/merge_requests/2", "application/json", editJSON(t, readFile(t, sourceData+"gitlab/merge_request.json"), func(m map[string]any) {
		m["iid"] = 2
		m["author"].(map[string]any)["id"], m["author"].(map[string]any)["username"] = 42, "outsider"
	}))
	gl.on("GET "+project+"/members/all/1", "application/json", readFile(t, sourceData+"gitlab/member.json"))
	gl.mu.Lock()
	gl.routes["GET "+project+"/members/all/42"] = func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"404 Not found"}`, http.StatusNotFound)
	}
	gl.mu.Unlock()
	var evs []map[string]any
	if err := json.Unmarshal(readFile(t, sourceData+"gitlab/label_events.json"), &evs); err != nil {
		t.Fatal(err)
	}
	evs = evs[:1] // an addition
	evs[0]["user"].(map[string]any)["id"] = 7
	evs[0]["label"].(map[string]any)["name"] = "API"
	events, _ := json.Marshal(evs)
	for _, n := range []string{"1", "2"} {
		gl.on("GET "+project+"/merge_requests/"+n+"/resource_label_events", "application/json", events)
	}
	gl.on("GET "+project+"/repository/files/.criticizer.yaml/raw", "text/plain", []byte("skip_labels: [API]\n"))
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
		c.ReviewerDirectory = `{"gitlab": {"user1": "` + user1 + `"}}`
	})
	post := func(uuid string, body []byte) job.ID {
		resp, b := s.postHook("/webhooks/gitlab", map[string]string{webhook.GitLabTokenHeader: glToken,
			webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: uuid}, body)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %s", uuid, resp.StatusCode, b)
		}
		return decodeAccepted(t, b).JobID
	}
	open := readFile(t, webhookData+"gitlab/merge_request.open.json") // labels: API

	v := s.waitJob(post("label-dev-1", open), 30*time.Second, job.StatusSucceeded)
	if v.Skipped != "" || !strings.Contains(strings.Join(v.SettingsWarnings, " "), "skip_labels does not apply") {
		t.Fatalf("merge request 1: skipped %q, warnings %q; want reviewed, saying why", v.Skipped, v.SettingsWarnings)
	}
	if n := len(emailsTo(t, s.env.SES, user1)); n != 1 {
		t.Fatalf("user1 got %d emails, want 1", n)
	}

	outsider := editJSON(t, open, func(m map[string]any) {
		m["object_attributes"].(map[string]any)["iid"] = 2
	})
	v = s.waitJob(post("label-outsider-2", outsider), 30*time.Second, job.StatusSucceeded)
	if !strings.Contains(v.Skipped, `the label "API" is in skip_labels`) || len(v.Deliveries) != 0 {
		t.Fatalf("merge request 2: skipped %q, deliveries %+v; want skipped for its label", v.Skipped, v.Deliveries)
	}
	if n := len(emailsTo(t, s.env.SES, user1)); n != 1 {
		t.Fatalf("user1 got %d emails after the skipped merge request, want 1", n)
	}
}
