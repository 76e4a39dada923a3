package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// quotaStack starts the pipeline with SES behind a quota proxy of its own
// (devstack.SESQuota, in front of the stack's SES): the account q, and a
// spent quota rechecked every recheck.
func quotaStack(t *testing.T, q devstack.SESQuotaConfig, recheck time.Duration, tweak func(*config.Config)) (*stack, *devstack.SESQuotaServer) {
	t.Helper()
	env := testenv.Stack(t)
	p, err := devstack.StartSESQuota("127.0.0.1:0", env.Endpoints.SES, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, func(c *config.Config) {
		c.Endpoints.SES, c.Notify.SESQuotaRecheck = p.URL, recheck
		if tweak != nil {
			tweak(c)
		}
	})
	return s, p
}

// jobsWithRecipients accepts one job per changelist, each with perJob
// recipients, and returns the job ids and every recipient.
func jobsWithRecipients(t *testing.T, s *stack, prefix string, jobs, perJob int) ([]job.ID, []string, []string) {
	t.Helper()
	var ids []job.ID
	var cls, rcpts []string
	for i := range jobs {
		cl := fmt.Sprintf("%s-%d", prefix, i)
		var mine []string
		for k := range perJob {
			mine = append(mine, fmt.Sprintf("%s-%d-%d@example.com", prefix, i, k))
		}
		ids = append(ids, accept(t, s, "k-"+cl, sample(t, cl, 1, mine...)))
		cls, rcpts = append(cls, cl), append(rcpts, mine...)
	}
	return ids, cls, rcpts
}

func emailsForAll(t *testing.T, s *stack, cls []string) []devstack.StoredEmail {
	t.Helper()
	var out []devstack.StoredEmail
	for _, cl := range cls {
		out = append(out, emailsFor(t, s.env.SES, cl)...)
	}
	return out
}

func noDeadLetters(t *testing.T, s *stack) {
	t.Helper()
	for _, st := range job.Stages() {
		if b := dlqBodies(t, s, st); len(b) != 0 {
			t.Fatalf("%s DLQ holds %d messages, want none: %s", st, len(b), b[0])
		}
	}
}

// A sandbox-like account (5 a day, 1 a second, both enforced by the quota
// proxy below the SDK) and 8 emails to send, through two notifiers: the
// first 5 arrive, paced at the account's 1/s; the other 3 are held — not
// sent, not dead-lettered, not charged to any budget — while GET /jobs
// shows their jobs retryable_failed with QUOTA_EXHAUSTED (never
// succeeded) and the unsent rows pending or failed_transient; sending is
// logged as paused, with the SendingPaused metric. Once the rolling
// window has room again (the proxy's clock moved a day on), the held
// emails go out, each exactly once, and every job succeeds.
// Rules: R-RATE-2, R-RATE-3.
func TestQuota_SpentDailyQuotaHoldsThenSendsOnce(t *testing.T) {
	t.Parallel()
	const recheck = 2 * time.Second
	s, p := quotaStack(t, devstack.SESQuotaConfig{Max24HourSend: 5, MaxSendRate: 1, EnforceDaily: true, EnforceRate: true}, recheck, nil)
	ids, cls, rcpts := jobsWithRecipients(t, s, testenv.Prefix(t), 2, 4)

	eventually(t, 4*time.Minute, "5 emails sent and sending paused", func() bool {
		return len(emailsForAll(t, s, cls)) >= 5 && strings.Contains(s.logText(), "sending paused")
	})
	time.Sleep(4 * recheck) // a few rechecks of a quota that stays spent
	if got := emailsForAll(t, s, cls); len(got) != 5 {
		t.Fatalf("%d emails while the daily quota of 5 is spent, want exactly 5", len(got))
	}
	if n := countLines(s.logText(), "deferred without spending the attempt budget", `"error_class":"QUOTA_EXHAUSTED"`); n < 2 {
		t.Fatalf("%d QUOTA_EXHAUSTED deferrals logged over %s of a spent quota, want the work paused (deferred) at each recheck", n, 4*recheck)
	}
	held := 0
	for _, id := range ids {
		var v api.JobView
		s.getJSON(s.jobLink(id), &v)
		unsent := 0
		for _, d := range v.Deliveries {
			if d.NotifiedAt != nil {
				continue
			}
			unsent++
			if d.Status != delivery.StatusPending && d.Status != delivery.StatusFailedTransient {
				t.Errorf("job %s: a held delivery is %s, want pending or failed_transient", id, d.Status)
			}
		}
		held += unsent
		if unsent == 0 {
			continue
		}
		if v.Status != job.StatusRetryableFailed || v.LastError == nil || v.LastError.ErrorClass != "QUOTA_EXHAUSTED" {
			t.Errorf("job %s with %d unsent: status %s, last error %+v; want retryable_failed with QUOTA_EXHAUSTED", id, unsent, v.Status, v.LastError)
		}
	}
	if held != 3 {
		t.Errorf("%d deliveries held, want 3", held)
	}
	logs := s.logText()
	if !strings.Contains(logs, "sending paused") || !strings.Contains(logs, `"SendingPaused":1`) {
		t.Error("no log line or SendingPaused metric says sending is paused")
	}
	noDeadLetters(t, s)

	p.Reset()
	for _, id := range ids {
		s.waitJob(id, 4*time.Minute, job.StatusSucceeded)
	}
	emails := emailsForAll(t, s, cls)
	got := perRecipient(emails)
	for _, r := range rcpts {
		if got[r] != 1 {
			t.Errorf("%s got %d emails, want exactly 1", r, got[r])
		}
	}
	if len(emails) != len(rcpts) {
		t.Errorf("%d emails for %d recipients", len(emails), len(rcpts))
	}
	noDeadLetters(t, s)
	daily, rate := p.Refused()
	t.Logf("quota: %d emails, %d pauses deferred, SES refused %d over the daily quota and %d over the rate",
		len(emails), countLines(s.logText(), "deferred without spending the attempt budget", `"error_class":"QUOTA_EXHAUSTED"`), daily, rate)
}

// SES refusing sends over its per-second rate ("Maximum sending rate
// exceeded", below the SDK): with the notifier's own limiter off, a job's
// sends come in a burst, SES refuses the excess, and each refusal is
// deferred as RATE_LIMITED — not taken for a spent quota — and sent
// later: one email per recipient, the job succeeds, nothing is
// dead-lettered.
// Rules: R-STAGE-6, R-RATE-3.
func TestQuota_RateThrottleDeferredAndSent(t *testing.T) {
	t.Parallel()
	s, p := quotaStack(t, devstack.SESQuotaConfig{Max24HourSend: -1, MaxSendRate: 1, EnforceRate: true}, 2*time.Second,
		func(c *config.Config) { c.Notify.MaxSendRate = 0 })
	ids, cls, rcpts := jobsWithRecipients(t, s, testenv.Prefix(t), 1, 4)

	s.waitJob(ids[0], 4*time.Minute, job.StatusSucceeded)
	got := perRecipient(emailsForAll(t, s, cls))
	for _, r := range rcpts {
		if got[r] != 1 {
			t.Errorf("%s got %d emails, want exactly 1", r, got[r])
		}
	}
	daily, rate := p.Refused()
	if rate == 0 || daily != 0 {
		t.Fatalf("SES refused %d sends over the rate and %d over the daily quota; want some over the rate, none over the quota", rate, daily)
	}
	logs := s.logText()
	if n := countLines(logs, "deferred without spending the attempt budget", `"error_class":"RATE_LIMITED"`); n == 0 {
		t.Error("no RATE_LIMITED deferral logged")
	}
	if strings.Contains(logs, "QUOTA_EXHAUSTED") || strings.Contains(logs, "sending paused") {
		t.Error("a rate throttle was taken for a spent daily quota")
	}
	noDeadLetters(t, s)
	t.Logf("rate: SES refused %d sends over 1/s", rate)
}

// The send rate follows the account's own quota (R-RATE-2): configured at
// the default 14/s, on a sandbox account whose GetAccount says 1/s
// (reported by the proxy, not enforced, so only the notifier's pacing
// holds it), two jobs of 6 recipients keep 1/s in the SES store's
// timestamps — over any n consecutive seconds at most (n+1)·1, the
// limiter's one window of slack (TestRateLimit_BurstKeepsConfiguredRate
// explains it). Paced at 14/s, each job's 6 go out within a second.
func TestQuota_PacingFollowsTheAccountsMaxSendRate(t *testing.T) {
	t.Parallel()
	const rate = 1
	s, _ := quotaStack(t, devstack.SESQuotaConfig{Max24HourSend: -1, MaxSendRate: rate}, 2*time.Second, nil)
	ids, cls, rcpts := jobsWithRecipients(t, s, testenv.Prefix(t), 2, 6)
	for _, id := range ids {
		s.waitJob(id, 4*time.Minute, job.StatusSucceeded)
	}
	emails := emailsForAll(t, s, cls)
	got := perRecipient(emails)
	for _, r := range rcpts {
		if got[r] != 1 {
			t.Errorf("%s got %d emails, want exactly 1", r, got[r])
		}
	}
	series := perSecondSeries(emails)
	for i := range series {
		sum := 0
		for j := i; j < len(series); j++ {
			sum += series[j]
			if n := j - i + 1; sum > rate*(n+1) {
				t.Errorf("seconds %d..%d: %d emails in %d s, more than the account's %d/s allows (%d, with one second of slack); per second %v",
					i, j, sum, n, rate, rate*(n+1), series)
			}
		}
	}
	t.Logf("pacing at the account's %d/s: %d emails, per second %v", rate, len(emails), series)
}
