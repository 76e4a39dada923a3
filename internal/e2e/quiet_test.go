package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// quietly turns the quiet rules on, with a collapse window of window.
func quietly(window time.Duration) func(*config.Config) {
	return func(c *config.Config) {
		c.LLM.CollapseWindow, c.Notify.MailSameDiff, c.Notify.MailUnchangedReruns = window, false, false
	}
}

// Three pushes inside the collapse window (generic versions opting in to
// the quiet rules, as a code host's pushes have them) mail each reviewer
// once, about the last: each version's notify waits on its queue (a
// delayed message) until the window after it was accepted, the two older
// versions' rows wait, unclaimed, until v3 has reached the reviewers, and
// are then superseded by v3, never claimed; the job status says so. (The
// same diff under a new version mailing nobody is
// TestQuiet_SameDiffUnderANewSHA_NoNewEmail, on the in-memory store.)
// Rules: R-QUIET-3, R-STAGE-6.
func TestQuiet_ThreePushesInTheWindow_OneEmailAboutTheLast(t *testing.T) {
	t.Parallel()
	// Long enough for three webhooks on a loaded machine; the test's
	// premise is checked below.
	const window = 4 * time.Second
	s := startStack(t, devstack.FunctionOptions{}, quietly(window))
	cl := testenv.Prefix(t)
	rcpt := []string{"ann@example.com", "bo@example.com"}
	clKey := job.ChangelistKey("generic", cl)

	start := time.Now()
	var ids []job.ID
	for v := 1; v <= 3; v++ {
		ids = append(ids, accept(t, s, "v"+string(rune('0'+v))+"-"+cl, quietSample(t, cl, v, true, rcpt...)))
	}
	if posted := time.Since(start); posted >= window {
		t.Fatalf("the three pushes took %s, not inside the %s window: the machine is too loaded for this test", posted, window)
	}
	var views []struct{ deliveries []string }
	for _, id := range ids {
		v := s.waitJob(id, 20*time.Second, job.StatusSucceeded)
		var ds []string
		for _, d := range v.Deliveries {
			ds = append(ds, string(d.Status)+" "+d.SkipReason)
		}
		views = append(views, struct{ deliveries []string }{ds})
	}
	if took := time.Since(start); took < window {
		t.Errorf("the versions were settled %s after the first push, inside the %s window", took, window)
	}
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 2 || perRecipient(emails)["ann@example.com"] != 1 || perRecipient(emails)["bo@example.com"] != 1 {
		t.Fatalf("%d emails %v, want one per reviewer", len(emails), perRecipient(emails))
	}
	for _, e := range emails {
		if versionOf(e) != 3 {
			t.Errorf("email %q about version %d, want it about v3", e.Subject, versionOf(e))
		}
	}
	for v := 1; v <= 2; v++ {
		if d := views[v-1].deliveries; len(d) != 2 || d[0] != "superseded v3" || d[1] != "superseded v3" {
			t.Errorf("v%d's job status shows %q, want both deliveries superseded by v3", v, d)
		}
		for _, r := range rcpt {
			row, err := s.fns.Deliveries.Get(context.Background(), delivery.ID(clKey, r, v))
			if err != nil || row.Status != delivery.StatusSuperseded || row.Attempts != 0 {
				t.Errorf("%s v%d: %s after %d attempts (%v), want superseded, never claimed", r, v, row.Status, row.Attempts, err)
			}
		}
	}
}
