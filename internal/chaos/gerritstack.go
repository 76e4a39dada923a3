package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/owed"
)

// gerritStack is the campaign's stacked Gerrit change: change 1, the
// author's own and not merged, adds a .criticizer.yaml that skips its
// author; change 2 is made on it (its patch set's parent is change 1's
// commit). Settings come only from code already merged (R-REPO-6): the
// destination branch's tip has none, so change 2 is reviewed and mailed
// to its reviewers. Its patchset-created event is posted under the
// faults; the oracle owes its patch set to each reviewer (R-OWED-1),
// the author's proposed settings deciding nothing.
type gerritStack struct {
	g          *devstack.GerritStandIn
	token      string
	author     devstack.GerritAccount
	Recipients []string
	child      string
	body       []byte
	// What intake answered the event, and when it was sent and
	// answered.
	sent, answered time.Time
	status         int
	changelist     string
	version        int
	jobID          job.ID
}

// newGerritStack builds the stack on a new Gerrit stand-in.
func newGerritStack(run string) *gerritStack {
	gs := &gerritStack{g: devstack.NewGerritStandIn("chaos-" + run), token: "gerrit-webhook-token-of-chaos-run-" + run, // at least 32 bytes, as a deployment demands
		author: devstack.GerritAccount{Name: "Chaos Author", Email: "chaosauthor@example.org", Username: "chaosauthor"}}
	tip, parent := sha(run, "gerrit-tip"), sha(run, "gerrit-parent")
	gs.child = sha(run, "gerrit-child")
	gs.g.Commit(tip, "", nil, "the branch", "")
	gs.g.Branch("main", tip)
	settings := "skip_authors: [chaosauthor]\n"
	gs.g.Commit(parent, tip, map[string]string{".criticizer.yaml": settings}, "skip my own changes",
		fmt.Sprintf("diff --git a/.criticizer.yaml b/.criticizer.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/.criticizer.yaml\n@@ -0,0 +1 @@\n+%s", settings))
	gs.g.Change(1, "main", 1, parent)
	file := gs.file()
	gs.g.Commit(gs.child, parent, map[string]string{file: "package x\n"}, "a change on my own",
		fmt.Sprintf("diff --git a/%[1]s b/%[1]s\nnew file mode 100644\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,2 @@\n+package x\n+// TODO: reviewed whatever my own change says\n", file))
	var reviewers []devstack.GerritAccount
	for _, r := range []string{"a", "b"} {
		addr := fmt.Sprintf("gr000%s.%s@example.com", r, run)
		gs.Recipients = append(gs.Recipients, addr)
		reviewers = append(reviewers, devstack.GerritAccount{Name: "Gerrit Reader " + r, Email: addr, Username: "gr" + r})
	}
	gs.g.Change(2, "main", 1, gs.child, reviewers...)
	gs.body = devstack.GerritPatchsetCreated(gs.g.Project, "main", 2, 1, gs.child, parent, gs.author, "a change on my own")
	return gs
}

// file is the file the child's patch set adds.
func (gs *gerritStack) file() string { return "g" + gs.child[:12] + ".go" }

// post posts the child's patchset-created event until answered below
// 500, and records the answer; the job accepted goes to accepted.
func (gs *gerritStack) post(ctx context.Context, s *sender, accepted map[job.ID]bool) {
	gs.sent = time.Now()
	backoff := 50 * time.Millisecond
	for attempt := 1; attempt <= s.maxAttempts && ctx.Err() == nil; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/webhooks/gerrit?token="+gs.token, bytes.NewReader(gs.body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := s.client.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				var ans struct {
					JobID         job.ID `json:"job_id"`
					ChangelistID  string `json:"changelist_id"`
					ReviewVersion int    `json:"review_version"`
				}
				_ = json.Unmarshal(b, &ans)
				gs.answered, gs.status = time.Now(), resp.StatusCode
				gs.jobID, gs.changelist, gs.version = ans.JobID, ans.ChangelistID, ans.ReviewVersion
				if ans.JobID != "" {
					accepted[ans.JobID] = true
				}
				return
			}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// world adds the stacked change to the oracle's world: one head, owed
// to both reviewers unless its job ended without mailing them; the
// settings its parent proposes decide nothing. It returns the mails of
// it that reached a reader.
func (gs *gerritStack) world(w *owed.World, emails []devstack.StoredEmail, ended map[job.ID]bool) []owed.Mail {
	if gs == nil {
		return nil
	}
	id := gs.changelist
	if id == "" {
		id = gs.g.Project + "~2"
	}
	c := owed.Change{ID: id, Author: gs.author.Username, Proposed: owed.Settings{SkipAuthors: []string{gs.author.Username}},
		Heads: []owed.Head{{Name: "ps1", Readers: gs.Recipients, Diff: gs.child, Took: int(gs.answered.Sub(gs.sent) / time.Millisecond),
			Failed: gs.status == 0 || gs.jobID == ""}}}
	w.Changes = append(w.Changes, c)
	ids := map[string]string{}
	for _, r := range gs.Recipients {
		ids[delivery.ID(job.ChangelistKey("gerrit", id), r, max(1, gs.version))] = r
	}
	var got []owed.Mail
	for _, e := range emails {
		if r, ok := ids[e.Header(mail.DeliveryIDHeader)]; ok {
			got = append(got, owed.Mail{Change: id, Head: "ps1", Reader: r})
		}
	}
	if gs.jobID != "" && ended[gs.jobID] {
		if w.Verdicts == nil {
			w.Verdicts = map[owed.Mail]owed.Verdict{}
		}
		for _, r := range gs.Recipients {
			m := owed.Mail{Change: id, Head: "ps1", Reader: r}
			if _, set := w.Verdicts[m]; !set {
				w.Verdicts[m] = owed.Refused
			}
		}
	}
	return got
}
