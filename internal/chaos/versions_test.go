package chaos

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/owed"
	"github.com/criticizer/criticizer/internal/testseed"
)

// The versions part's second version is a valid diff with one finding
// more than the first (so R-QUIET-2 mails it), and every order and SES
// verdict is drawn.
// Rules: R-OWED-1.
func TestGenerateVersions_TwoValidVersionsTheSecondWithSomethingNew(t *testing.T) {
	vs := generateVersions(testseed.Rand(t, 1), "xtest", 9, "tok")
	orders, fates := map[string]bool{}, map[owed.Verdict]bool{}
	for _, v := range vs {
		orders[v.Order], fates[v.Fate] = true, true
		var n [2]int
		for k := range 2 {
			var body struct {
				Diff    string `json:"diff"`
				Version int    `json:"review_version"`
			}
			if err := json.Unmarshal(v.bodies[k], &body); err != nil || body.Version != k+1 {
				t.Fatalf("%s v%d: %v %d", v.Changelist, k+1, err, body.Version)
			}
			c, err := critic.NewOffline().Review(context.Background(), critic.Input{ChangelistID: v.Changelist, ReviewVersion: k + 1, Diff: body.Diff})
			if err != nil {
				t.Fatalf("%s v%d: %v", v.Changelist, k+1, err)
			}
			n[k] = len(c.Findings)
		}
		if n[1] != n[0]+1 {
			t.Errorf("%s: %d findings in v1, %d in v2, want one more", v.Changelist, n[0], n[1])
		}
	}
	if len(orders) != 3 || len(fates) != 3 {
		t.Errorf("orders %v, fates %v: want every one drawn", orders, fates)
	}
}

// The campaign's oracle world: the later version pushed first makes the
// earlier one stale; a mail SES rejected is not delivered, and the
// version below is then owed; a version whose job ended without mailing
// is owed to nobody it did not reach.
// Rules: R-OWED-1, R-SOURCE-6, R-QUIET-4.
func TestOwedWorld_LateRejectedEnded(t *testing.T) {
	vs := generateVersions(testseed.Rand(t, 2), "xtest", 1, "tok")
	v := vs[0]
	v.Order, v.Fate = "late", owed.Rejected
	t0 := v.sent[0]
	v.sent[1], v.answered[1], v.status[1] = t0.Add(1), t0.Add(2e6), 202
	v.sent[0], v.answered[0], v.status[0] = t0.Add(3e6), t0.Add(4e6), 409
	email := func(r string, ver int) devstack.StoredEmail {
		var e devstack.StoredEmail
		e.Headers = append(e.Headers, struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}{mail.DeliveryIDHeader, delivery.ID(job.ChangelistKey("generic", v.Changelist), r, ver)})
		return e
	}
	w, got := owedWorld(vs, []devstack.StoredEmail{email(v.Recipients[0], 2), email(v.Recipients[1], 2)}, nil)
	if len(got) != 1 {
		t.Fatalf("delivered %v, want the one SES did not reject", got)
	}
	f := owed.Check(w, owed.Compute(w), got, nil)
	if !f.OK() {
		t.Errorf("late v1, v2 rejected for b: %s", f)
	}
	// v1 late is stale: mailing it is wrong.
	got = append(got, owed.Mail{Change: v.Changelist, Head: "v1", Reader: v.Recipients[0]})
	if f := owed.Check(w, owed.Compute(w), got, nil); len(f.Wrong) != 1 {
		t.Errorf("the stale v1 mailed: %s, want it wrong", f)
	}
	// v2's job dead-lettered before mailing a: nothing is owed to a.
	w, got = owedWorld(vs, nil, map[job.ID]bool{v.id(1): true})
	if f := owed.Check(w, owed.Compute(w), got, nil); !f.OK() {
		t.Errorf("v2 dead-lettered, v1 stale: %s, want nothing owed", f)
	}
}

// The code host's part: x5's synchronize before x3's and x4's makes
// them stale — mailing x3 is wrong, not mailing x5 is lost; an email is told by the
// head whose file it reviews, and one that reviews another head than
// the one intake gave its version to is a problem; a force-push's heads
// are in the code host's order, the rewritten head's webhook late.
// Rules: R-OWED-1, R-SOURCE-6.
func TestHostWorld_LateAndForcePushInTheCodeHostsOrder(t *testing.T) {
	const repo = "chaos/xtest"
	ps := generateHostPulls("xtest", sha("xtest", "base"), 3)
	if ps[0].Kind != "late" || ps[2].Kind != "force-push" || len(ps[2].Heads) != 4 {
		t.Fatalf("kinds %s %s, %d heads", ps[0].Kind, ps[2].Kind, len(ps[2].Heads))
	}
	t0 := time.Now()
	// Each pull request's webhooks in their posting order, one after
	// another; stale where a later head named the head.
	for _, p := range ps {
		step := 0
		for _, g := range p.Posts {
			for _, i := range g {
				h := p.Heads[i]
				h.sent, h.answered, h.status = t0.Add(time.Duration(step)*time.Second), t0.Add(time.Duration(step)*time.Second+time.Millisecond), 202
			}
			step++
		}
	}
	late, force := ps[0], ps[2]
	// x1, x2, x5 in order; x3 late, versioned (skipped at fetch); x4
	// late and stale.
	late.Heads[3].status, late.Heads[3].stale = 200, true
	late.Heads[0].version, late.Heads[1].version, late.Heads[4].version, late.Heads[2].version = 1, 2, 3, 4
	force.Heads[2].status, force.Heads[2].stale = 200, true // ya after yb
	force.Heads[0].version, force.Heads[1].version, force.Heads[3].version = 1, 2, 3
	at := ps[1]
	at.Heads[0].version, at.Heads[1].version, at.Heads[2].version = 1, 3, 2
	email := func(p *hostPull, r string, ver int, h *hostHead) devstack.StoredEmail {
		var e devstack.StoredEmail
		e.Headers = append(e.Headers, struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}{mail.DeliveryIDHeader, delivery.ID(job.ChangelistKey("github", p.changelist(repo)), r, ver)})
		e.Body.Text = "Findings\n" + h.file() + ":2 TODO\n"
		return e
	}
	var emails []devstack.StoredEmail
	for _, r := range late.Recipients {
		emails = append(emails, email(late, r, 1, late.Heads[0]), email(late, r, 2, late.Heads[1]), email(late, r, 3, late.Heads[4]))
	}
	for _, r := range force.Recipients {
		emails = append(emails, email(force, r, 1, force.Heads[0]), email(force, r, 2, force.Heads[1]), email(force, r, 3, force.Heads[3]))
	}
	for _, r := range at.Recipients {
		emails = append(emails, email(at, r, 1, at.Heads[0]), email(at, r, 2, at.Heads[2]))
	}
	check := func(emails []devstack.StoredEmail) (owed.Findings, []string) {
		var w owed.World
		got, problems := hostWorld(&w, repo, ps, t0, emails, nil)
		return owed.Check(w, owed.Compute(w), got, nil), problems
	}
	if f, problems := check(emails); !f.OK() || len(problems) > 0 {
		t.Fatalf("every newest head mailed once: %s %v", f, problems)
	}
	// x3, late, mailed as version 4 (its skip at fetch undone): wrong.
	if f, _ := check(append(slices.Clone(emails), email(late, late.Recipients[0], 4, late.Heads[2]))); len(f.Wrong) != 1 {
		t.Errorf("the late x3 mailed: %s, want it wrong", f)
	}
	// yb never mailed to b: lost.
	if f, _ := check(slices.DeleteFunc(slices.Clone(emails), func(e devstack.StoredEmail) bool {
		return e.Header(mail.DeliveryIDHeader) == delivery.ID(job.ChangelistKey("github", force.changelist(repo)), force.Recipients[1], 3)
	})); len(f.Lost) != 1 {
		t.Errorf("yb not mailed to b: %s, want it lost", f)
	}
	// At once: x3's version 2 email reviews x2: a problem.
	bad := slices.Clone(emails)
	bad[len(bad)-1] = email(at, at.Recipients[1], 2, at.Heads[1])
	if _, problems := check(bad); len(problems) != 1 {
		t.Errorf("version 2 reviewing x2, accepted as 3: problems %v, want one", problems)
	}
}

// The stacked Gerrit change: its patch set is owed to both reviewers
// whatever its unmerged parent's settings say; not mailing one is lost;
// its job ended without mailing, nothing is owed.
// Rules: R-OWED-1, R-REPO-6.
func TestGerritStack_OwedWhateverTheParentProposes(t *testing.T) {
	gs := newGerritStack("xtest")
	defer gs.g.Close()
	gs.sent, gs.answered, gs.status, gs.changelist, gs.version, gs.jobID = time.Now(), time.Now(), 202, "chaos-xtest~2", 1, "j_1"
	email := func(r string) devstack.StoredEmail {
		var e devstack.StoredEmail
		e.Headers = append(e.Headers, struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}{mail.DeliveryIDHeader, delivery.ID(job.ChangelistKey("gerrit", gs.changelist), r, 1)})
		return e
	}
	check := func(emails []devstack.StoredEmail, ended map[job.ID]bool) owed.Findings {
		var w owed.World
		got := gs.world(&w, emails, ended)
		return owed.Check(w, owed.Compute(w), got, nil)
	}
	if f := check([]devstack.StoredEmail{email(gs.Recipients[0]), email(gs.Recipients[1])}, nil); !f.OK() {
		t.Errorf("both reviewers mailed: %s", f)
	}
	if f := check([]devstack.StoredEmail{email(gs.Recipients[0])}, nil); len(f.Lost) != 1 {
		t.Errorf("one reviewer not mailed: %s, want it lost", f)
	}
	if f := check(nil, map[job.ID]bool{"j_1": true}); !f.OK() {
		t.Errorf("the job ended without mailing: %s, want nothing owed", f)
	}
}
