package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/wire"
)

// digestClock is the clock the stack's digests are due by: the real time
// moved by an offset the test sets, so a reader's digest hour comes
// without waiting for it. Leases, evidence times and the emulators keep
// the real time.
type digestClock struct{ off atomic.Int64 }

func (c *digestClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// nextDay moves the digest clock a day and a minute on: every digest due
// by then is due.
func (c *digestClock) nextDay() { c.off.Add(int64(24*time.Hour + time.Minute)) }

// digestStack starts a stack whose digests follow clock.
func digestStack(t *testing.T, clock *digestClock, o devstack.FunctionOptions, tweak ...func(*config.Config)) *stack {
	o.Wire.DigestNow = clock.now
	return startStack(t, o, tweak...)
}

// choose saves a reader's delivery mode, their digest at this hour UTC:
// the next one due a day from now.
func (s *stack) choose(rcpt string, mode prefs.Mode) {
	s.t.Helper()
	p := prefs.Default()
	p.Mode, p.DigestHour = mode, time.Now().UTC().Hour()
	if _, err := s.fns.Recipients.SavePreferences(context.Background(), unsubscribe.RecipientID(rcpt), p); err != nil {
		s.t.Fatal(err)
	}
}

// mailTo is every stored email to rcpt.
func mailTo(t *testing.T, s *stack, rcpt string) []devstack.StoredEmail {
	t.Helper()
	all, err := s.env.SES.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []devstack.StoredEmail
	for _, e := range all {
		for _, to := range e.Destination.To {
			if strings.EqualFold(to, rcpt) {
				out = append(out, e)
			}
		}
	}
	return out
}

// withConflict is the sample webhook with a merge conflict marker added in
// a file of its own: the offline critic reports an error.
func withConflict(t *testing.T, cl string, recipients ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sample(t, cl, 1, recipients...), &m); err != nil {
		t.Fatal(err)
	}
	m["diff"] = m["diff"].(string) + "diff --git a/merge.go b/merge.go\nnew file mode 100644\n--- /dev/null\n+++ b/merge.go\n@@ -0,0 +1,3 @@\n+package billing\n+<<<<<<< HEAD\n+var rate = 1\n"
	b, _ := json.Marshal(m)
	return b
}

// sweepUntil runs the sweeper until cond holds (the pollers carry what it
// hands over).
func (s *stack) sweepUntil(d time.Duration, what string, cond func() bool) {
	s.t.Helper()
	eventually(s.t, d, what, func() bool {
		if _, err := s.fns.Sweeper.Run(context.Background()); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		return cond()
	})
}

// A reader on daily delivery is mailed nothing while three changelists
// are reviewed during their day, and exactly one digest when their hour
// comes: all three in it, its own conversation, with the one-click
// unsubscribe; more sweeps send no second one. A reader on instant
// delivery of the same changelists gets each at once. The digest is an
// delivery row: sent, its SES events recorded on it.
// Rules: R-DIGEST-1, R-DIGEST-2, R-DIGEST-3, R-DIGEST-4.
func TestDigest_DailyReader_OneDigestOfTheDaysThreeChangelists(t *testing.T) {
	t.Parallel()
	clock := &digestClock{}
	s := digestStack(t, clock, devstack.FunctionOptions{})
	ctx := context.Background()
	p := testenv.Prefix(t)
	daily, instant := "dana-"+p+"@example.com", "ivan-"+p+"@example.com"
	s.choose(daily, prefs.Daily)
	var ids []job.ID
	for _, cl := range []string{p + "-a", p + "-b", p + "-c"} {
		ids = append(ids, accept(t, s, "k-"+cl, sample(t, cl, 1, daily, instant)))
	}
	for _, id := range ids {
		s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	}
	eventually(t, 20*time.Second, "three emails to the instant reader", func() bool { return len(mailTo(t, s, instant)) == 3 })
	if got := mailTo(t, s, daily); len(got) != 0 {
		t.Fatalf("the daily reader got %d emails during the day, want none", len(got))
	}
	row, err := s.fns.Deliveries.Get(ctx, delivery.ID(job.ChangelistKey("generic", p+"-a"), daily, 1))
	if err != nil || row.Status != delivery.StatusDigested || row.Digest == "" {
		t.Fatalf("the daily reader's row: %v %s %q; want digested", err, row.Status, row.Digest)
	}
	// Their hour comes.
	clock.nextDay()
	s.sweepUntil(30*time.Second, "the digest", func() bool { return len(mailTo(t, s, daily)) > 0 })
	for range 3 {
		if _, err := s.fns.Sweeper.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // a second digest would land now
	got := mailTo(t, s, daily)
	if len(got) != 1 {
		t.Fatalf("the daily reader has %d emails, want exactly one digest", len(got))
	}
	e := got[0]
	if !strings.HasPrefix(e.Subject, "[Criticizer] Daily digest for ") || !strings.HasSuffix(e.Subject, ": 3 changelists") {
		t.Errorf("subject %q", e.Subject)
	}
	for _, cl := range []string{p + "-a", p + "-b", p + "-c"} {
		if !strings.Contains(e.Body.Text, "== "+cl+" version 1 ==") {
			t.Errorf("the digest lacks %s", cl)
		}
	}
	if e.Header(mail.DeliveryIDHeader) != row.Digest || e.Header(mail.ListUnsubscribeHeader) == "" || e.Header(mail.ReferencesHeader) != "" ||
		e.Header(mail.ReasonHeader) != mail.ReasonDigest {
		t.Errorf("headers: delivery id %q (row names %q), List-Unsubscribe %q, References %q, reason %q", e.Header(mail.DeliveryIDHeader),
			row.Digest, e.Header(mail.ListUnsubscribeHeader), e.Header(mail.ReferencesHeader), e.Header(mail.ReasonHeader))
	}
	eventually(t, 20*time.Second, "the digest's SES events on its row", func() bool {
		g, err := s.fns.Deliveries.Get(ctx, row.Digest)
		return err == nil && g.Status == delivery.StatusDelivered && g.NotificationID == e.MessageID && len(g.Entries) == 3
	})
}

// A reader on mixed delivery gets the critique with an error at once and
// the one without in their digest, which holds only that one.
// Rules: R-DIGEST-5, R-DIGEST-2.
func TestDigest_MixedReader_ErrorAtOnceTheRestInTheDigest(t *testing.T) {
	t.Parallel()
	clock := &digestClock{}
	s := digestStack(t, clock, devstack.FunctionOptions{})
	p := testenv.Prefix(t)
	mixed := "mia-" + p + "@example.com"
	s.choose(mixed, prefs.Mixed)
	errCL, warnCL := p+"-err", p+"-warn"
	s.waitJob(accept(t, s, "k-"+errCL, withConflict(t, errCL, mixed)), 60*time.Second, job.StatusSucceeded)
	s.waitJob(accept(t, s, "k-"+warnCL, sample(t, warnCL, 1, mixed)), 60*time.Second, job.StatusSucceeded)
	eventually(t, 20*time.Second, "the error at once", func() bool { return len(mailTo(t, s, mixed)) == 1 })
	at := mailTo(t, s, mixed)[0]
	if !strings.Contains(at.Subject, errCL) || at.Header(mail.SeverityHeader) != "error" {
		t.Fatalf("at once: %q severity %q, want %s's critique with its error", at.Subject, at.Header(mail.SeverityHeader), errCL)
	}
	clock.nextDay()
	s.sweepUntil(30*time.Second, "the digest", func() bool { return len(mailTo(t, s, mixed)) == 2 })
	time.Sleep(2 * time.Second)
	got := mailTo(t, s, mixed)
	if len(got) != 2 {
		t.Fatalf("%d emails, want the error at once and one digest", len(got))
	}
	d := got[1]
	if got[0].MessageID == at.MessageID {
		d = got[1]
	} else {
		d = got[0]
	}
	if !strings.Contains(d.Subject, "Daily digest") || !strings.Contains(d.Body.Text, "== "+warnCL+" version 1 ==") || strings.Contains(d.Body.Text, errCL) {
		t.Errorf("digest %q: want %s only:\n%s", d.Subject, warnCL, d.Body.Text)
	}
}

// A digest whose SendEmail answer is lost after SES stored it (the
// connection reset below the SDK, which must not resend) is still one
// email: held, then settled from its Send event, never sent again.
// Rules: R-DIGEST-1, R-OUTBOX-5, R-OUTBOX-6.
func TestDigest_SendAnswerLost_StillOneEmail(t *testing.T) {
	t.Parallel()
	clock := &digestClock{}
	inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", Kind: fault.LoseAnswer, Times: 1, Match: func(in any) bool {
		m, ok := in.(*sesv2.SendEmailInput)
		return ok && m.Content != nil && m.Content.Simple != nil && m.Content.Simple.Subject != nil &&
			strings.Contains(*m.Content.Simple.Subject.Data, "Daily digest")
	}})
	s := digestStack(t, clock, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}}, func(cfg *config.Config) {
		cfg.Notify.DeliveryLease, cfg.EvidenceMargin = time.Second, 3*time.Second
	})
	ctx := context.Background()
	p := testenv.Prefix(t)
	daily := "dora-" + p + "@example.com"
	s.choose(daily, prefs.Daily)
	cl := p + "-a"
	s.waitJob(accept(t, s, "k-"+cl, sample(t, cl, 1, daily)), 60*time.Second, job.StatusSucceeded)
	row, err := s.fns.Deliveries.Get(ctx, delivery.ID(job.ChangelistKey("generic", cl), daily, 1))
	if err != nil || row.Status != delivery.StatusDigested {
		t.Fatalf("row: %v %s", err, row.Status)
	}
	clock.nextDay()
	s.sweepUntil(30*time.Second, "the digest's send", func() bool { return inj.Fired("SESv2", "SendEmail") == 1 })
	eventually(t, 60*time.Second, "the digest settled from its Send event", func() bool {
		g, err := s.fns.Deliveries.Get(ctx, row.Digest)
		return err == nil && !g.NotifiedAt.IsZero() && !g.SendEventAt.IsZero()
	})
	for range 3 {
		if _, err := s.fns.Sweeper.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // a resend would land now
	got := mailTo(t, s, daily)
	if len(got) != 1 {
		t.Fatalf("%d digests in the mailbox, want exactly one", len(got))
	}
	g, _ := s.fns.Deliveries.Get(ctx, row.Digest)
	if g.NotificationID != got[0].MessageID || g.Attempts != 1 || g.ResentWithoutEvidence != 0 || len(g.DuplicateMessageIDs) != 0 {
		t.Errorf("digest row: %s id %q (stored %q), %d attempts, %d resends, duplicates %v; want one send, backfilled",
			g.Status, g.NotificationID, got[0].MessageID, g.Attempts, g.ResentWithoutEvidence, g.DuplicateMessageIDs)
	}
	if b := dlqBodies(t, s, job.StageNotify); len(b) != 0 {
		t.Errorf("notify DLQ holds %d messages", len(b))
	}
}
