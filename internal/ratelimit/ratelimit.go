// Package ratelimit keeps every notifier, however many Lambdas run at once,
// under the SES account's maximum send rate (, critical
// test 5: "many jobs -> max N calls/second").
//
// SES defines the rate as messages accepted per second, so the limiter is
// a fixed window of one wall-clock second, counted in DynamoDB: one item
// per second (RATE#<name>#<unix second> in the jobs table), incremented
// with a conditional UpdateItem (ADD n 1, only if n < max) before each
// send. A condition failure means the second is full: the caller sleeps
// until the next second (plus a little jitter, so the waiters do not all
// arrive in the same millisecond) and tries that window. The count is
// shared by every process, needs no lease or clock agreement beyond NTP's,
// costs one write per email, and the items expire by TTL a few minutes
// later. A token bucket would smooth bursts within the second, but SES
// does not ask for that, and it needs a read-modify-write per send.
//
// A window's slots are handed out only in its first part (Guard, 250 ms by
// default, is kept back at the end): a send counted late in second t must
// not reach SES in second t+1, where it would be one more than that
// second's max. In a saturated second the slots go in its first
// milliseconds anyway; an idle caller arriving in the guard waits at most
// the guard. What happens after the slot is handed out (the SES call's own
// latency) is outside the limiter's reach: a send delayed by more than the
// guard is counted by SES in the next second. The bound that holds
// whatever the latency (under a second) is that any n consecutive SES
// seconds see at most (n+1)·max sends, i.e. the rate itself over any
// stretch of time, with one window of slack.
//
// A caller waits at most MaxWait (3 s) in all, and never into the last
// Reserve (10 s, or a quarter of the time left if less) before its
// context's deadline (nor is it let through
// there: a send whose row cannot be marked afterwards is worse than no
// send); then it gets a retryable
// RATE_LIMITED error carrying Retry-After, and the stage runner defers the
// message without charging its attempt budget (internal/stage). The
// deadline matters because one notify invocation sends a whole batch
// (up to 10 messages of up to 50 recipients) one by one: waiting out the
// function's timeout would kill it mid-claim, leaving rows in `sending`
// until their lease and the reconciliation grace pass, while giving up in
// time lets the notifier release each row and the runner defer each
// message cleanly.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/retry"
)

// DefaultRate is the SES sandbox's and a new production account's maximum
// send rate, messages per second.
const DefaultRate = 14

// Defaults of a Limiter's timing.
const (
	DefaultMaxWait = 3 * time.Second
	DefaultGuard   = 250 * time.Millisecond
	DefaultReserve = 10 * time.Second
	// DefaultTTL keeps a window's item this long after its second: long
	// enough for no clock to still be counting into it.
	DefaultTTL = 5 * time.Minute
	maxJitter  = 50 * time.Millisecond
)

// ErrFull is the cause of the RATE_LIMITED error Wait returns when no
// window had room within MaxWait.
var ErrFull = errors.New("send rate limit: no room within the wait allowed")

// Counter counts acquisitions per window.
type Counter interface {
	// Take adds one to window's count if the count is below max, and
	// reports whether it did.
	Take(ctx context.Context, window int64, max int) (bool, error)
}

// Account is the provider account's own sending quota, as the limiter
// needs it (sesmail.Account reads SES's GetAccount).
type Account interface {
	// Allow returns the account's maximum send rate (messages per second;
	// 0 when unknown), or a QUOTA_EXHAUSTED error when the account's daily
	// quota is spent and no send may start (R-RATE-3).
	Allow(ctx context.Context) (rate float64, err error)
}

// Limiter paces callers to Rate per wall-clock second across processes,
// or to the account's own maximum send rate when that is lower
// (R-RATE-2). The zero Rate (or a nil *Limiter) lets everything through
// unpaced; the account's spent daily quota still stops every send.
type Limiter struct {
	Counter Counter
	Rate    int
	// Account, if set, is consulted before every wait: its spent daily
	// quota stops the send, and its maximum send rate caps Rate.
	Account Account
	// MaxWait bounds how long Wait blocks in all.
	MaxWait time.Duration
	// Reserve is the time before the context's deadline that Wait leaves
	// to the caller (to release its claim and defer the message).
	Reserve time.Duration
	// Guard is the end of each second in which its slots are not handed
	// out (see the package comment).
	Guard time.Duration
	Now   func() time.Time
	// Sleep waits for d or until ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a delay in [0, max) added to each wait for the next
	// window.
	Jitter func(max time.Duration) time.Duration
}

// New returns a limiter with the default timing.
func New(c Counter, rate int) *Limiter {
	return &Limiter{Counter: c, Rate: rate, MaxWait: DefaultMaxWait, Guard: DefaultGuard, Reserve: DefaultReserve}
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Limiter) sleep(ctx context.Context, d time.Duration) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (l *Limiter) jitter() time.Duration {
	if l.Jitter != nil {
		return l.Jitter(maxJitter)
	}
	return rand.N(maxJitter)
}

// Wait blocks until this caller may send one message, or returns a
// retryable RATE_LIMITED error (with a Retry-After of one second) once
// MaxWait has passed (or Reserve before the context's deadline would),
// or the context's error, or the counter's error.
//
// With an Account, a spent daily quota is returned first, as its
// QUOTA_EXHAUSTED error: no slot is taken for a send that cannot happen.
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	rate := l.Rate
	if l.Account != nil {
		acct, err := l.Account.Allow(ctx)
		if err != nil {
			return err
		}
		rate = EffectiveRate(l.Rate, acct)
	}
	if rate <= 0 {
		return nil
	}
	start := l.now()
	deadline := start.Add(l.MaxWait)
	if d, ok := ctx.Deadline(); ok {
		// The reserve is at most a quarter of the time left: a function with
		// a short timeout (a test's, or a deployment's 10 s) still gets to
		// send, with time kept to release the claim.
		reserve := min(l.Reserve, d.Sub(start)/4)
		if d.Add(-reserve).Before(deadline) {
			deadline = d.Add(-reserve)
		}
	}
	var lastErr error
	full := func() error {
		if lastErr != nil {
			// The counter failed: that, not a full window, is the cause.
			return fmt.Errorf("send rate limit: %w", lastErr)
		}
		return retry.WithRetryAfter(retry.Transient(retry.RateLimited, ErrFull), time.Second)
	}
	for {
		now := l.now()
		if now.After(deadline) {
			return full()
		}
		window := now.Unix()
		next := time.Unix(window+1, 0)
		if next.Sub(now) > l.Guard {
			ok, err := l.Counter.Take(ctx, window, rate)
			if err != nil && !retry.Classify(err).Retryable() {
				return fmt.Errorf("send rate limit: %w", err)
			}
			lastErr = err
			// A retryable failure (a throttle, a lost answer) is a window
			// not taken: the next one is tried, within the wait allowed.
			// A slot whose write came back late (a slow DynamoDB answer, a
			// descheduled process) is given up rather than used: the send
			// would land in the next second. It stays counted, which only
			// errs on the side of sending less.
			if ok && next.Sub(l.now()) > l.Guard {
				return nil
			}
		}
		wake := next.Add(l.jitter())
		if wake.After(deadline) {
			return full()
		}
		if err := l.sleep(ctx, wake.Sub(l.now())); err != nil {
			return err
		}
	}
}

// EffectiveRate is the rate a limiter keeps: the configured one, capped by
// the account's maximum send rate when that is known and lower (R-RATE-2).
// A configured 0 (the limiter off) stays 0. SES states the rate as a
// number of messages per second that may be fractional; the windows are
// whole seconds, so it is rounded down, but never below one: an account
// slower than 1/s is paced at 1/s and its throttles are deferred.
func EffectiveRate(configured int, account float64) int {
	if configured <= 0 || account <= 0 {
		return configured
	}
	return min(configured, max(1, int(account)))
}

// Dynamo is the Counter in DynamoDB: one item per window, keyed
// "RATE#<Name>#<unix second>" in a table whose partition key is "pk" and
// whose TTL attribute is "expires_at" (the jobs table).
type Dynamo struct {
	DB    *dynamodb.Client
	Table string
	Name  string        // what is limited, e.g. "ses"
	TTL   time.Duration // how long after its second an item lives; DefaultTTL if zero
}

// Key is the partition key of a window's item.
func (d Dynamo) Key(window int64) string {
	return "RATE#" + d.Name + "#" + strconv.FormatInt(window, 10)
}

// Take implements Counter with one conditional UpdateItem.
func (d Dynamo) Take(ctx context.Context, window int64, max int) (bool, error) {
	ttl := d.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	expires := time.Unix(window, 0).Add(ttl).Unix()
	_, err := d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.Table),
		Key:                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: d.Key(window)}},
		UpdateExpression:    aws.String("ADD #n :one SET #exp = :exp"),
		ConditionExpression: aws.String("attribute_not_exists(#n) OR #n < :max"),
		ExpressionAttributeNames: map[string]string{
			"#n": "n", "#exp": "expires_at",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":max": &types.AttributeValueMemberN{Value: strconv.Itoa(max)},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)},
		},
	}, func(o *dynamodb.Options) {
		// ADD is not idempotent: an SDK retry of a write whose answer was
		// lost would count the slot twice. The limiter tries the next
		// window instead (Wait).
		o.RetryMaxAttempts = 1
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rate window %s: %w", d.Key(window), err)
	}
	return true, nil
}
