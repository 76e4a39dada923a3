package e2e

import (
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Over the real stack: with CRITICIZER_ALLOWED_RECIPIENT_DOMAINS set to
// example.com, a review for one address there and one elsewhere mails
// only the first; the other's row in DynamoDB reads skipped_domain, the
// job status shows it, SkippedDomain counts it, the job succeeds.
// Rules: R-RECIPIENT-1.
func TestAllowedDomains_OutsiderSkippedNeverSent(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		d, err := delivery.ParseDomains("example.com")
		if err != nil {
			t.Fatal(err)
		}
		c.AllowedRecipientDomains = d
	})
	cl := testenv.Prefix(t)
	inside, outside := "ann."+cl+"@example.com", "eve."+cl+"@attacker.example"
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, inside, outside))
	view := s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	row := s.settledRow(delivery.ID(job.ChangelistKey("generic", cl), outside, 1))
	if row.Status != delivery.StatusSkippedDomain || row.NotificationID != "" || row.Attempts != 0 {
		t.Errorf("the outsider's row: %s, %d attempts, id %q; want skipped_domain, never claimed", row.Status, row.Attempts, row.NotificationID)
	}
	if n := len(emailsTo(t, s.env.SES, inside)); n != 1 {
		t.Errorf("%d emails to the allowed address, want 1", n)
	}
	if n := len(emailsTo(t, s.env.SES, outside)); n != 0 {
		t.Errorf("%d emails to the address outside the allowed domains, want 0", n)
	}
	shown := false
	for _, d := range view.Deliveries {
		shown = shown || d.Status == delivery.StatusSkippedDomain
	}
	if !shown {
		t.Errorf("the job status does not show skipped_domain: %+v", view.Deliveries)
	}
	if countLines(s.logText(), `"SkippedDomain":1`) != 1 {
		t.Error("SkippedDomain was not counted once")
	}
}
