package ratelimit_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/ratelimit"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/testenv"
)

// memCounter is an in-process Counter (the DynamoDB one is tested against
// DynamoDB Local below).
type memCounter struct {
	mu    sync.Mutex
	n     map[int64]int
	calls int
	err   error
}

func (c *memCounter) Take(_ context.Context, w int64, max int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.err != nil {
		return false, c.err
	}
	if c.n == nil {
		c.n = map[int64]int{}
	}
	if c.n[w] >= max {
		return false, nil
	}
	c.n[w]++
	return true, nil
}

// fakeClock: Sleep advances Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) limiter(counter ratelimit.Counter, rate int) *ratelimit.Limiter {
	l := ratelimit.New(counter, rate)
	l.Now = func() time.Time { return c.t }
	l.Sleep = func(_ context.Context, d time.Duration) error { c.t = c.t.Add(d); return nil }
	l.Jitter = func(time.Duration) time.Duration { return 10 * time.Millisecond }
	return l
}

var t0 = time.Unix(1_800_000_000, 100*int64(time.Millisecond)) // 100 ms into a second

// , "many jobs -> max N calls/second": with rate 3,
// nine callers are spread over three consecutive seconds, three each; the
// fourth caller of a second waits for the next one.
// Rules: R-RATE-1.
func TestLimiter_AtMostRatePerSecond(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: t0}
	l := clk.limiter(c, 3)
	l.MaxWait = time.Minute
	got := map[int64]int{}
	for range 9 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		got[clk.t.Unix()]++
	}
	s := t0.Unix()
	if len(got) != 3 || got[s] != 3 || got[s+1] != 3 || got[s+2] != 3 {
		t.Fatalf("sends per second %v, want 3 in each of %d, %d, %d", got, s, s+1, s+2)
	}
}

// A slot is never handed out in the last Guard of a second: a send counted
// there could reach SES in the next second and exceed its max.
func TestLimiter_GuardAtTheEndOfASecond(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: time.Unix(1_800_000_000, 900*int64(time.Millisecond))}
	l := clk.limiter(c, 5)
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := int64(1_800_000_001); clk.t.Unix() != want || c.n[want] != 1 || c.n[want-1] != 0 {
		t.Fatalf("took a slot at %s (windows %v); want the next second's", clk.t, c.n)
	}
}

// : when no window has room within MaxWait the
// caller gets a retryable RATE_LIMITED with Retry-After, so the stage
// runner defers the message instead of spending an attempt.
// Rules: R-STAGE-6.
func TestLimiter_GivesUpWithRateLimited(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: t0}
	l := clk.limiter(c, 1)
	for w := t0.Unix(); w < t0.Unix()+10; w++ {
		_, _ = c.Take(context.Background(), w, 1) // every second already full
	}
	start := clk.t
	err := l.Wait(context.Background())
	cls := retry.Classify(err)
	if err == nil || !errors.Is(err, ratelimit.ErrFull) || cls.Class != retry.RateLimited || !cls.Retryable() || cls.RetryAfter != time.Second {
		t.Fatalf("Wait = %v (class %v, retry-after %v); want retryable RATE_LIMITED wrapping ErrFull with Retry-After 1s", err, cls, cls.RetryAfter)
	}
	if waited := clk.t.Sub(start); waited > ratelimit.DefaultMaxWait {
		t.Errorf("waited %s, more than MaxWait %s", waited, ratelimit.DefaultMaxWait)
	}
}

// Rate 0 (CRITICIZER_MAX_SEND_RATE=0) and a nil limiter let everything
// through without touching the counter; a counter error is returned as is
// (classified by its own type), not as a full window.
func TestLimiter_OffAndErrors(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: t0}
	if err := clk.limiter(c, 0).Wait(context.Background()); err != nil || c.calls != 0 {
		t.Fatalf("rate 0: %v, %d counter calls", err, c.calls)
	}
	var nilL *ratelimit.Limiter
	if err := nilL.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.err = errors.New("dynamodb down")
	if err := clk.limiter(c, 5).Wait(context.Background()); err == nil || errors.Is(err, ratelimit.ErrFull) {
		t.Fatalf("counter error: Wait = %v", err)
	}
}

// The DynamoDB counter against DynamoDB Local: 40 concurrent takers of one
// window with max 7 get exactly 7 slots (the conditional ADD is atomic),
// another window is independent, and the item expires by TTL a few minutes
// after its second (the jobs table's expires_at).
func TestDynamo_ConcurrentTakersGetExactlyMax(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	d := ratelimit.Dynamo{DB: env.Clients.DynamoDB, Table: res.JobsTable, Name: "ses"}
	const window, max, takers = int64(1_800_000_000), 7, 40
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, takers)
	for range takers {
		wg.Go(func() {
			got, err := d.Take(context.Background(), window, max)
			if err != nil {
				errs <- err
			}
			if got {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ok.Load() != max {
		t.Fatalf("%d of %d takers got a slot, want exactly %d", ok.Load(), takers, max)
	}
	if got, err := d.Take(context.Background(), window+1, max); err != nil || !got {
		t.Fatalf("next window: %v %v", got, err)
	}
	out, err := env.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(res.JobsTable),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: d.Key(window)}}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := out.Item["n"].(*types.AttributeValueMemberN)
	exp, _ := out.Item["expires_at"].(*types.AttributeValueMemberN)
	if n == nil || n.Value != "7" || exp == nil || exp.Value != strconv.FormatInt(window+int64(ratelimit.DefaultTTL/time.Second), 10) {
		t.Fatalf("window item %v; want n=7 and expires_at=%d", out.Item, window+300)
	}
}

// Waiting never eats into the last Reserve before the context's deadline:
// the notifier needs that time to release its claim and the runner to
// defer the message, instead of being killed by the function timeout.
func TestLimiter_StopsWaitingBeforeTheDeadline(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: t0}
	l := clk.limiter(c, 1)
	l.MaxWait = time.Minute
	for w := t0.Unix(); w < t0.Unix()+100; w++ {
		_, _ = c.Take(context.Background(), w, 1)
	}
	// A deadline 45 s ahead: the full 10 s reserve applies (a quarter of
	// 45 s is more), so the caller may wait 35 s at most.
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(45*time.Second))
	defer cancel()
	start := clk.t
	err := l.Wait(ctx)
	if retry.Classify(err).Class != retry.RateLimited {
		t.Fatalf("Wait = %v; want RATE_LIMITED", err)
	}
	if waited := clk.t.Sub(start); waited > 35*time.Second {
		t.Errorf("waited %s into the reserve (35 s allowed)", waited)
	}
}

// With little time left the reserve shrinks to a quarter of it, so a
// function with a short timeout still sends; with a full limiter it gives
// up within three quarters of the time left.
func TestLimiter_ShortDeadline_ReserveIsAQuarterOfTheTimeLeft(t *testing.T) {
	c := &memCounter{}
	clk := &fakeClock{t: t0}
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(3*time.Second))
	defer cancel()
	if err := clk.limiter(c, 5).Wait(ctx); err != nil {
		t.Fatalf("Wait with room and 3 s left = %v; want a slot", err)
	}
	full := &memCounter{}
	for w := t0.Unix(); w < t0.Unix()+100; w++ {
		_, _ = full.Take(context.Background(), w, 1)
	}
	l := clk.limiter(full, 1)
	l.MaxWait = time.Minute
	start := clk.t
	err := l.Wait(ctx)
	if retry.Classify(err).Class != retry.RateLimited {
		t.Fatalf("Wait on a full limiter = %v; want RATE_LIMITED", err)
	}
	if waited := clk.t.Sub(start); waited > 2250*time.Millisecond {
		t.Errorf("waited %s; at most three quarters of the 3 s left", waited)
	}
}

// lateCounter's Take answers late: the clock has moved into the guard.
type lateCounter struct {
	memCounter
	clk   *fakeClock
	delay time.Duration
	late  int // how many answers are late
}

func (c *lateCounter) Take(ctx context.Context, w int64, max int) (bool, error) {
	ok, err := c.memCounter.Take(ctx, w, max)
	if c.late > 0 {
		c.late--
		c.clk.t = c.clk.t.Add(c.delay)
	}
	return ok, err
}

// A slot that came back after the window's usable part is not used (the
// send would land in the next second); the caller takes one in the next
// window instead.
func TestLimiter_LateSlotIsNotUsed(t *testing.T) {
	clk := &fakeClock{t: t0}
	c := &lateCounter{clk: clk, delay: 800 * time.Millisecond, late: 1}
	l := clk.limiter(c, 5)
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.n[t0.Unix()] != 1 || c.n[t0.Unix()+1] != 1 || clk.t.Unix() != t0.Unix()+1 {
		t.Fatalf("windows %v, now %s: want the late slot left unused and one taken in the next second", c.n, clk.t)
	}
}
