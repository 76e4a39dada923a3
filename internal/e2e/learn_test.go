package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/vote"
)

// A team's votes teach its deployment, end to end. Four readers of one
// repository's changelist are mailed its debug print; its author, one of
// them, and two others reply "wrong 1" over SMTP: the author's own vote
// does not count, so `criticizer learnings list` proposes nothing. A third
// reader's "wrong 1" makes it proposed; the operator accepts it with
// `criticizer learnings accept <id>`. The next changelist of that
// repository is mailed without the debug print, saying one finding was
// left out by the team's learnings; a changelist of another repository
// still shows it.
// GET /admin/learnings lists what the CLI lists, and a decided learning
// is not decided again, by the CLI or the admin API.
// Rules: R-LEARN-1, R-LEARN-2, R-REPLY-4.
func TestLearn_ThreeReadersWrong_AcceptedRuleLeftOutOfThatRepository(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{SMTP: "127.0.0.1:0"}, func(c *config.Config) {
		c.InboundDomain, c.AdminAPIKey = replyDomain, adminKey
	})
	prefix := strings.ToLower(testenv.Prefix(t))
	repo, other := "acme/"+prefix+"-billing", "acme/"+prefix+"-ledger"
	author := "dan@example.com"
	readers := []string{"ann@example.com", "bo@example.com", "cy@example.com", author}
	debug := `	fmt.Println("total", sum)`
	post := func(cl, repository string, to ...string) {
		t.Helper()
		body := genericBody(t, cl, 1, reviewDiff(debug, ""), map[string]any{"repository": repository, "author": author}, to...)
		s.waitJob(accept(t, s, "k-"+cl, body), 30*time.Second, job.StatusSucceeded)
	}
	cl := prefix + "-1"
	post(cl, repo, readers...)
	reply := func(reader string) {
		t.Helper()
		e := s.emailTo(cl, reader, 1)
		if !strings.Contains(e.Body.Text, "(debug-print)") {
			t.Fatalf("%s's email lacks the debug print:\n%s", reader, e.Body.Text)
		}
		s.replyTo(e, reader, "wrong 1")
		eventually(t, 30*time.Second, reader+"'s confirmation", func() bool { return len(s.confirmations(cl, reader)) == 1 })
	}
	list := func() []vote.Learning {
		t.Helper()
		out, err := s.cli("--json", "learnings", "list")
		if err != nil {
			t.Fatalf("criticizer learnings list: %v\n%s", err, out)
		}
		var ls []vote.Learning
		if err := json.Unmarshal([]byte(out), &ls); err != nil {
			t.Fatalf("criticizer --json learnings list: %v\n%s", err, out)
		}
		return ls
	}
	for _, r := range []string{"ann@example.com", author, "bo@example.com"} {
		reply(r)
	}
	if ls := list(); len(ls) != 0 {
		t.Fatalf("proposed after two readers and the author: %+v; the author's own vote counted", ls)
	}
	reply("cy@example.com")
	ls := list()
	if len(ls) != 1 || ls[0].Repository != "generic:"+repo || ls[0].Rule != "debug-print" || ls[0].Wrong != 3 || ls[0].State != vote.Proposed {
		t.Fatalf("learnings %+v, want debug-print proposed in %s by three readers", ls, repo)
	}
	if out, err := s.cli("learnings", "list"); err != nil || !strings.Contains(out, ls[0].ID) || !strings.Contains(out, "proposed") {
		t.Fatalf("criticizer learnings list: %v\n%s", err, out)
	}
	// The admin API lists the same learning.
	var listed api.LearningList
	if code, b := s.admin("GET", "/admin/learnings", adminKey, nil); code != 200 || json.Unmarshal(b, &listed) != nil ||
		len(listed.Learnings) != 1 || listed.Learnings[0].ID != ls[0].ID || listed.Learnings[0].State != vote.Proposed {
		t.Fatalf("GET /admin/learnings: %d %s", code, b)
	}
	if out, err := s.cli("learnings", "accept", ls[0].ID); err != nil || !strings.Contains(out, "accepted "+ls[0].ID) {
		t.Fatalf("criticizer learnings accept: %v\n%s", err, out)
	}
	if out, err := s.cli("learnings", "accept", ls[0].ID); err == nil || !strings.Contains(out, "decided already") {
		t.Errorf("a second accept: %v\n%s", err, out)
	}
	if code, b := s.admin("POST", "/admin/learnings/"+ls[0].ID+"/reject", adminKey, nil); code != 409 || !strings.Contains(string(b), `"field":"id"`) {
		t.Errorf("rejecting an accepted learning: %d %s, want 409 naming id", code, b)
	}

	// The next review of that repository, and one of another.
	next, elsewhere := prefix+"-2", prefix+"-3"
	post(next, repo, "ann@example.com")
	post(elsewhere, other, "ann@example.com")
	e := s.emailTo(next, "ann@example.com", 1)
	const said = "1 finding is left out by your team's learnings"
	if strings.Contains(e.Body.Text, "(debug-print)") || !strings.Contains(e.Body.Text, said) || !strings.Contains(e.Body.HTML, said) {
		t.Errorf("the next review of %s shows the debug print, or does not say one was left out:\n%s", repo, e.Body.Text)
	}
	if o := s.emailTo(elsewhere, "ann@example.com", 1).Body.Text; !strings.Contains(o, "(debug-print)") || strings.Contains(o, "team's learnings") {
		t.Errorf("another repository's review lost the debug print:\n%s", o)
	}
	if got := s.logText(); !strings.Contains(got, `"FindingsLearnedOut":1`) || countLines(got, `"LearningVotes":1`, `"Outcome":"author"`) != 1 {
		t.Errorf("metrics: FindingsLearnedOut or the author's vote not counted as such")
	}
}
