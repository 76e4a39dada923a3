package chaos

import (
	"context"
	"encoding/json"
	"testing"

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
