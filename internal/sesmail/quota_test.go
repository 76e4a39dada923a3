package sesmail_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/testenv"
)

// quotaProxy starts the SES quota proxy in front of the stack's SES and
// returns it with a sender (and its Account) that talk through it.
func quotaProxy(t *testing.T, env testenv.Env, q devstack.SESQuotaConfig) (*devstack.SESQuotaServer, *sesmail.Sender) {
	t.Helper()
	p, err := devstack.StartSESQuota("127.0.0.1:0", env.Endpoints.SES, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ep := config.Endpoints{SES: p.URL}
	cfg, err := profile.Load(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	c := sesmail.NewSES(cfg, p.URL)
	s := sesmail.NewSender(c, "Criticizer <criticizer@example.com>", "")
	s.Account = sesmail.NewAccount(c, nil, 90*time.Second)
	return p, s
}

// stored counts the messages in the SES store carrying the delivery id.
func stored(t *testing.T, env testenv.Env, did string) int {
	t.Helper()
	emails, err := env.SES.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range emails {
		if e.Header(mail.DeliveryIDHeader) == did {
			n++
		}
	}
	return n
}

// SES's refusal of a send over the daily quota, in each shape AWS's
// documents give it (the developer guide's ThrottlingException; the v2
// API reference's TooManyRequestsException and LimitExceededException),
// answered below the SDK by the quota proxy in front of the real
// emulator: the SDK makes one attempt, the sender classifies it
// QUOTA_EXHAUSTED (not RATE_LIMITED) with the recheck interval as
// Retry-After, nothing reaches the SES store, and the account is paused —
// the next send is stopped before it reaches SES (R-RATE-3). The rate
// refusal ("Maximum sending rate exceeded") stays RATE_LIMITED.
func TestSender_DailyQuotaRefusalPausesSending(t *testing.T) {
	env := testenv.Stack(t)
	for _, shape := range []struct {
		code   string
		status int
	}{{"ThrottlingException", http.StatusBadRequest}, {"TooManyRequestsException", http.StatusTooManyRequests}, {"LimitExceededException", http.StatusBadRequest}} {
		t.Run(shape.code, func(t *testing.T) {
			p, s := quotaProxy(t, env, devstack.SESQuotaConfig{Max24HourSend: 2, MaxSendRate: 14, EnforceDaily: true,
				ErrorCode: shape.code, ErrorStatus: shape.status})
			prefix := testenv.Prefix(t)
			msg := delivery.Message{Subject: prefix, Text: "t", HTML: "<p>t</p>"}
			for i := range 2 {
				if _, err := s.Send(context.Background(), prefix+"-ok"+string(rune('a'+i)), "rcpt@example.com", msg); err != nil {
					t.Fatalf("send %d within the quota: %v", i+1, err)
				}
			}
			did := prefix + "-over"
			_, err := s.Send(context.Background(), did, "rcpt@example.com", msg)
			c := retry.Classify(err)
			if c == nil || c.Class != retry.QuotaExhausted || c.RetryAfter != 90*time.Second {
				t.Fatalf("send over the quota: %v (class %v); want QUOTA_EXHAUSTED with Retry-After 90s", err, c)
			}
			if !sesmail.IsDailyQuota(err) {
				t.Error("IsDailyQuota does not recognise SES's answer")
			}
			if n := stored(t, env, did); n != 0 {
				t.Errorf("%d messages stored for the refused send, want 0", n)
			}
			if daily, _ := p.Refused(); daily != 1 {
				t.Errorf("proxy refused %d sends over the quota, want 1 (the SDK made one attempt)", daily)
			}
			if _, err := s.Account.Allow(context.Background()); retry.Classify(err).Class != retry.QuotaExhausted {
				t.Errorf("after SES's refusal the account allows sending: %v", err)
			}
		})
	}
	t.Run("rate", func(t *testing.T) {
		p, s := quotaProxy(t, env, devstack.SESQuotaConfig{Max24HourSend: -1, MaxSendRate: 1, EnforceRate: true})
		at := time.Now()
		p.Clock = func() time.Time { return at } // both sends in one second
		prefix := testenv.Prefix(t)
		msg := delivery.Message{Subject: prefix, Text: "t", HTML: "<p>t</p>"}
		if _, err := s.Send(context.Background(), prefix+"-1", "rcpt@example.com", msg); err != nil {
			t.Fatal(err)
		}
		_, err := s.Send(context.Background(), prefix+"-2", "rcpt@example.com", msg)
		if c := retry.Classify(err).Class; c != retry.RateLimited || sesmail.IsDailyQuota(err) {
			t.Fatalf("second send in one second at 1/s: %v (class %s); want RATE_LIMITED", err, c)
		}
		if rate, err := s.Account.Allow(context.Background()); err != nil || rate != 1 {
			t.Errorf("after a rate throttle: rate %v, err %v; want 1/s and no pause", rate, err)
		}
	})
}

// GetAccount through the proxy: the SendQuota the account has, with
// SentLast24Hours counting what SES accepted and forgetting it after 24
// hours of the proxy's clock (R-RATE-2).
func TestReadQuota_GetAccountThroughTheLocalProxy(t *testing.T) {
	env := testenv.Stack(t)
	p, s := quotaProxy(t, env, devstack.Sandbox())
	read := func() sesmail.Quota {
		t.Helper()
		q, err := s.Account.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	if q := read(); q != (sesmail.Quota{Max24HourSend: 200, MaxSendRate: 1, SentLast24Hours: 0}) {
		t.Fatalf("sandbox quota %+v, want 200/day 1/s, none sent", q)
	}
	if _, err := s.Send(context.Background(), testenv.Prefix(t), "rcpt@example.com", delivery.Message{Subject: "q", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	if q := read(); q.SentLast24Hours != 1 {
		t.Fatalf("after one send: %+v, want SentLast24Hours 1", q)
	}
	p.Reset()
	if q := read(); q.SentLast24Hours != 0 {
		t.Fatalf("a day later: %+v, want SentLast24Hours 0", q)
	}
}

// clockAccount is an Account over a scripted GetAccount and a fake clock.
type clockAccount struct {
	*sesmail.Account
	now   time.Time
	quota sesmail.Quota
	err   error
	reads int
	log   bytes.Buffer
}

func newClockAccount(q sesmail.Quota) *clockAccount {
	a := &clockAccount{now: time.Unix(1_800_000_000, 0), quota: q}
	a.Account = &sesmail.Account{Recheck: 5 * time.Minute, TTL: time.Minute, Now: func() time.Time { return a.now },
		Log:  obs.NewLogger(&a.log, "info"),
		Read: func(context.Context) (sesmail.Quota, error) { a.reads++; return a.quota, a.err }}
	return a
}

func (a *clockAccount) allow(t *testing.T) (float64, *retry.Error) {
	t.Helper()
	rate, err := a.Allow(context.Background())
	return rate, retry.Classify(err)
}

// The account's quota, as the notifier keeps it (R-RATE-2, R-RATE-3): the
// rate comes from GetAccount, read at the first send and again after the
// TTL; the sends this process made count towards the daily quota between
// readings, and once it is spent no send starts for the recheck interval
// (QUOTA_EXHAUSTED, Retry-After the time left), with the SendingPaused
// metric and an error line that names no address; after the interval a
// fresh reading decides; an unreadable quota paces at the configured rate.
func TestAccount_ReadsPausesAndResumes(t *testing.T) {
	a := newClockAccount(sesmail.Quota{Max24HourSend: 5, MaxSendRate: 1, SentLast24Hours: 2})
	if rate, err := a.allow(t); err != nil || rate != 1 || a.reads != 1 {
		t.Fatalf("first send: rate %v err %v reads %d; want 1/s from one GetAccount", rate, err, a.reads)
	}
	a.Sent()
	a.Sent()
	if _, err := a.allow(t); err != nil || a.reads != 1 {
		t.Fatalf("4 of 5 sent: %v after %d reads; want room, no new read within the TTL", err, a.reads)
	}
	a.Sent()
	_, err := a.allow(t)
	if err == nil || err.Class != retry.QuotaExhausted || err.RetryAfter != 5*time.Minute || !errors.Is(err, sesmail.ErrDailyQuota) {
		t.Fatalf("5 of 5 sent: %v; want QUOTA_EXHAUSTED, Retry-After 5m", err)
	}
	if !strings.Contains(a.log.String(), `"SendingPaused":1`) || !strings.Contains(a.log.String(), "sending paused") || strings.Contains(a.log.String(), "@") {
		t.Errorf("pause log: want the SendingPaused metric and an error line, no address:\n%s", a.log.String())
	}
	a.now = a.now.Add(2 * time.Minute)
	if _, err := a.allow(t); err == nil || err.RetryAfter != 3*time.Minute || a.reads != 1 {
		t.Fatalf("2 minutes into the pause: %v, %d reads; want QUOTA_EXHAUSTED for the 3 minutes left, no read", err, a.reads)
	}
	// Past the pause: a fresh reading, still spent, pauses again.
	a.now = a.now.Add(3 * time.Minute)
	a.quota.SentLast24Hours = 5
	if _, err := a.allow(t); err == nil || err.Class != retry.QuotaExhausted || a.reads != 2 {
		t.Fatalf("after the pause, still spent: %v after %d reads; want a fresh read and QUOTA_EXHAUSTED", err, a.reads)
	}
	// The window moved on: room again.
	a.now = a.now.Add(5 * time.Minute)
	a.quota.SentLast24Hours = 3
	if rate, err := a.allow(t); err != nil || rate != 1 || a.reads != 3 {
		t.Fatalf("room again: rate %v err %v reads %d; want 1/s after a fresh read", rate, err, a.reads)
	}
	if !strings.Contains(a.log.String(), "sending resumed") {
		t.Error("no line says sending resumed")
	}
	// SES refusing a send pauses at once, whatever the reading said.
	a.Spent(context.Background())
	if _, err := a.allow(t); err == nil || err.Class != retry.QuotaExhausted {
		t.Fatalf("after SES's refusal: %v; want QUOTA_EXHAUSTED", err)
	}
	// Unreadable (no permission, no proxy): the configured rate, no pause.
	b := newClockAccount(sesmail.Quota{})
	b.err = errors.New("AccessDeniedException: not authorized to perform ses:GetAccount (test)")
	if rate, err := b.allow(t); err != nil || rate != 0 {
		t.Fatalf("unreadable quota: rate %v err %v; want 0 (unknown) and no error", rate, err)
	}
	if _, err := b.allow(t); err != nil || b.reads != 1 {
		t.Fatalf("unreadable quota read %d times within the TTL, want 1", b.reads)
	}
	// No daily limit (-1): never spent.
	c := newClockAccount(sesmail.Quota{Max24HourSend: -1, MaxSendRate: 14, SentLast24Hours: 1e6})
	if rate, err := c.allow(t); err != nil || rate != 14 {
		t.Fatalf("unlimited quota: rate %v err %v; want 14 and no pause", rate, err)
	}
}
