package sesmail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// Timing of an Account.
const (
	// DefaultAccountTTL is how long a GetAccount reading is used. The
	// quota changes when AWS raises it, and SentLast24Hours moves with
	// every notifier's sends, but SES itself has the last word on each
	// send: a stale reading costs at most a send SES refuses, which pauses
	// sending all the same.
	DefaultAccountTTL = 5 * time.Minute
	// DefaultQuotaRecheck is how long a spent daily quota pauses sending
	// before it is looked at again (a fresh GetAccount). The quota is a
	// rolling 24 hours: room comes back as the sends of a day ago age out,
	// a little at a time, not at a fixed hour, so the pause is short and
	// repeated rather than long. AWS asks for a wait of up to 10 minutes
	// after a throttle; 5 minutes also stays under the sweeper's
	// stuck-job threshold (CRITICIZER_SWEEP_STUCK_AFTER, 10 minutes by
	// default), so the sweeper never re-enqueues a paused job.
	DefaultQuotaRecheck = 5 * time.Minute
	// MaxQuotaRecheck is SQS's longest DelaySeconds: a paused message
	// waits as a delayed copy on its queue.
	MaxQuotaRecheck = 15 * time.Minute
	// getAccountTimeout bounds one GetAccount, the SDK's retries included.
	getAccountTimeout = 5 * time.Second
)

// ErrDailyQuota is the cause of the QUOTA_EXHAUSTED error a notifier gets
// while the account's daily sending quota is spent.
var ErrDailyQuota = errors.New("SES daily sending quota exhausted")

// Quota is the account's sending quota: SES v2 GetAccount's SendQuota.
type Quota struct {
	// Max24HourSend is how many messages the account may send in any 24
	// hours; -1 (any negative) means no limit.
	Max24HourSend float64
	// MaxSendRate is how many messages per second SES accepts.
	MaxSendRate float64
	// SentLast24Hours is how many the account sent in the last 24 hours.
	SentLast24Hours float64
}

// Spent reports whether the quota leaves no room once extra more messages
// are counted.
func (q Quota) Spent(extra int) bool {
	return q.Max24HourSend >= 0 && q.SentLast24Hours+float64(extra) >= q.Max24HourSend
}

// ReadQuota reads the account's sending quota with SES v2 GetAccount. It
// is a read, so, unlike SendEmail, the SDK retries it (its standard
// attempts, awsclient/retry.go), however the client is configured.
func ReadQuota(ctx context.Context, c *sesv2.Client) (Quota, error) {
	out, err := c.GetAccount(ctx, &sesv2.GetAccountInput{}, func(o *sesv2.Options) {
		o.RetryMaxAttempts = awsretry.DefaultMaxAttempts
	})
	if err != nil {
		return Quota{}, fmt.Errorf("ses get account: %w", err)
	}
	if out.SendQuota == nil {
		return Quota{}, errors.New("ses get account: the answer has no SendQuota")
	}
	return Quota{Max24HourSend: out.SendQuota.Max24HourSend, MaxSendRate: out.SendQuota.MaxSendRate,
		SentLast24Hours: out.SendQuota.SentLast24Hours}, nil
}

// IsDailyQuota reports whether err is SES's answer to a send over the
// account's daily quota. SES answers both of its sending limits with a
// throttling error, and only the message tells them apart ("Daily message
// quota exceeded" against "Maximum sending rate exceeded"). The code is
// not relied on: the SES developer guide names ThrottlingException, while
// the SES v2 API reference lists TooManyRequestsException (429) and
// LimitExceededException for SendEmail, so any AWS error whose message
// says the daily quota is exceeded is one.
func IsDailyQuota(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	m := strings.ToLower(api.ErrorMessage())
	return strings.Contains(m, "daily message quota exceeded") || strings.Contains(m, "daily sending quota exceeded")
}

// Account keeps what a notifier knows of the account's sending quota
// (R-RATE-2, R-RATE-3): a GetAccount reading, used for TTL, plus the sends
// this process made since; and a pause once the daily quota is found
// spent, by the reading or by SES refusing a send. It is the limiter's
// ratelimit.Account and the Sender's witness of each send.
//
// A reading that fails (a missing permission, the local emulator without
// its quota proxy) is logged and sending goes on at the configured rate:
// SES still refuses a send over its quota, which pauses sending.
type Account struct {
	// Read returns the account's quota (ReadQuota).
	Read func(ctx context.Context) (Quota, error)
	// TTL is how long a reading is used (DefaultAccountTTL if zero, and
	// never longer than Recheck).
	TTL time.Duration
	// Recheck is how long a spent quota pauses sending
	// (DefaultQuotaRecheck if zero; at most MaxQuotaRecheck).
	Recheck time.Duration
	Now     func() time.Time
	Log     *slog.Logger

	mu          sync.Mutex
	quota       Quota
	known       bool
	readAt      time.Time
	sent        int // by this process since readAt
	pausedUntil time.Time
	paused      bool
}

// NewAccount returns an Account reading the quota with c.
func NewAccount(c *sesv2.Client, log *slog.Logger, recheck time.Duration) *Account {
	return &Account{Read: func(ctx context.Context) (Quota, error) { return ReadQuota(ctx, c) }, Recheck: recheck, Log: log}
}

func (a *Account) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Account) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.New(slog.DiscardHandler)
}

// recheck is the pause; a nil Account's is the default.
func (a *Account) recheck() time.Duration {
	if a == nil || a.Recheck <= 0 {
		return DefaultQuotaRecheck
	}
	return min(a.Recheck, MaxQuotaRecheck)
}

func (a *Account) ttl() time.Duration {
	ttl := a.TTL
	if ttl <= 0 {
		ttl = DefaultAccountTTL
	}
	return min(ttl, a.recheck())
}

// Allow implements ratelimit.Account: the account's maximum send rate (0
// when unknown), or QUOTA_EXHAUSTED while the daily quota is spent. It
// reads GetAccount when its reading is older than TTL (one caller reads;
// the others wait for it).
func (a *Account) Allow(ctx context.Context) (float64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if now.Before(a.pausedUntil) {
		return 0, a.spentError(now)
	}
	if a.readAt.IsZero() || now.Sub(a.readAt) >= a.ttl() {
		a.refresh(ctx, now)
	}
	if !a.known {
		return 0, nil
	}
	if a.quota.Spent(a.sent) {
		a.pause(ctx, now, "get_account")
		return 0, a.spentError(now)
	}
	return a.quota.MaxSendRate, nil
}

// refresh reads the quota. Called with a.mu held.
func (a *Account) refresh(ctx context.Context, now time.Time) {
	a.readAt = now
	rctx, cancel := context.WithTimeout(ctx, getAccountTimeout)
	q, err := a.Read(rctx)
	cancel()
	if err != nil {
		// The previous reading, if any, is kept with the sends counted
		// since: better than none.
		a.log().WarnContext(ctx, "could not read the SES account's sending quota; pacing at the configured rate",
			"error_class", retry.Classify(err).Class, "error", err)
		return
	}
	if !a.known || q.Max24HourSend != a.quota.Max24HourSend || q.MaxSendRate != a.quota.MaxSendRate {
		a.log().InfoContext(ctx, "SES account sending quota", "max_24_hour_send", q.Max24HourSend,
			"max_send_rate", q.MaxSendRate, "sent_last_24_hours", q.SentLast24Hours)
	}
	a.quota, a.known, a.sent = q, true, 0
	if a.paused && !q.Spent(0) {
		a.paused = false
		a.log().InfoContext(ctx, "SES daily sending quota has room again; sending resumed",
			"max_24_hour_send", q.Max24HourSend, "sent_last_24_hours", q.SentLast24Hours)
	}
}

// pause stops sends for the recheck interval and forces a fresh reading
// after it. It emits the SendingPaused metric and an error line each time a
// notifier finds the quota spent (at most once per recheck interval per
// process): an alarm on the metric is in ALARM for as long as the pause
// lasts. Called with a.mu held.
func (a *Account) pause(ctx context.Context, now time.Time, source string) {
	d := a.recheck()
	a.pausedUntil, a.readAt, a.paused = now.Add(d), time.Time{}, true
	obs.Metric(ctx, a.log(), map[string]string{"Function": "notify"}, map[string]float64{"SendingPaused": 1})
	attrs := []any{"source", source, "recheck_after_s", d.Seconds()}
	if a.known {
		attrs = append(attrs, "max_24_hour_send", a.quota.Max24HourSend, "sent_last_24_hours", a.quota.SentLast24Hours+float64(a.sent))
	}
	a.log().ErrorContext(ctx, "SES daily sending quota exhausted; sending paused, nothing is dead-lettered", attrs...)
}

// spentError is the QUOTA_EXHAUSTED error of a pause: retried when the
// pause ends (at least a second from now).
func (a *Account) spentError(now time.Time) error {
	err := ErrDailyQuota
	if a.known && a.quota.Max24HourSend >= 0 {
		err = fmt.Errorf("%w: %.0f of %.0f sent in the last 24 hours", ErrDailyQuota, a.quota.SentLast24Hours+float64(a.sent), a.quota.Max24HourSend)
	}
	return retry.WithRetryAfter(retry.Transient(retry.QuotaExhausted, err), max(a.pausedUntil.Sub(now), time.Second))
}

// Sent counts a send SES accepted. Safe on a nil Account.
func (a *Account) Sent() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.sent++
	a.mu.Unlock()
}

// Spent records SES's refusal of a send over the daily quota: sending
// pauses. Safe on a nil Account.
func (a *Account) Spent(ctx context.Context) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if now.Before(a.pausedUntil) {
		return // already paused: a send that raced the pause
	}
	a.pause(ctx, now, "ses_answer")
}
