package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// These tests try, as a change's author would, to lower a review with
// what the author controls beyond the diff: a change of their own
// stacked under the one reviewed. Settings and exemptions come only from
// code already merged (R-REPO-6).

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
