package devstack

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/criticizer/criticizer/internal/delivery"
	notifier "github.com/criticizer/criticizer/internal/notify"
)

// Lambda ends an invocation at its timeout by stopping its execution
// environment: nothing the handler would do afterwards happens. A goroutine
// cannot be stopped from outside, so the local stack makes the part that
// matters true instead: once the poller kills an invocation, every AWS
// request that invocation makes fails before it leaves the process (and an
// email it would send through a replacement Sender is not sent). The
// handler's goroutine may run on, but it can no longer change DynamoDB,
// SQS, S3, SNS or SES. The switch travels in the invocation's context as a
// value, so it survives context.WithoutCancel, which code uses precisely to
// finish a write after its deadline.

// ErrInvocationKilled is the error every AWS request of a killed
// invocation fails with.
var ErrInvocationKilled = errors.New("the invocation was killed at its timeout (Lambda stops the execution environment)")

// Invocation is one invocation's kill switch.
type Invocation struct {
	killed atomic.Bool
}

// Kill stops the invocation's effects: its later AWS requests fail.
func (i *Invocation) Kill() { i.killed.Store(true) }

// Killed reports whether the invocation was killed.
func (i *Invocation) Killed() bool { return i != nil && i.killed.Load() }

type invocationKey struct{}

// WithInvocation returns ctx carrying the invocation's kill switch.
func WithInvocation(ctx context.Context, inv *Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation ctx belongs to, or nil outside one.
func InvocationFrom(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	return inv
}

// Killed reports whether ctx belongs to an invocation that was killed.
func Killed(ctx context.Context) bool { return InvocationFrom(ctx).Killed() }

// KillSwitch is an SDK option (an awsclient.Option) that makes a killed
// invocation's AWS requests fail: the config's HTTP client is wrapped, so
// it applies below the SDK's retry loop to every attempt, and the error
// says it is not retryable, so the SDK gives up at once. Install it last,
// outside any fault injector, so a killed invocation's request reaches
// nothing. StartFunctions installs it on every function it builds.
func KillSwitch() func(*aws.Config) {
	return func(cfg *aws.Config) {
		next := cfg.HTTPClient
		if next == nil {
			next = http.DefaultClient
		}
		cfg.HTTPClient = killClient{next: next}
	}
}

type killClient struct{ next aws.HTTPClient }

func (c killClient) Do(req *http.Request) (*http.Response, error) {
	if Killed(req.Context()) {
		return nil, killedError{}
	}
	resp, err := c.next.Do(req)
	if err == nil && Killed(req.Context()) {
		// Killed while the request was in flight: the service may have done
		// the work, but the answer reaches no one.
		resp.Body.Close()
		return nil, killedError{}
	}
	return resp, err
}

type killedError struct{}

func (killedError) Error() string        { return ErrInvocationKilled.Error() }
func (killedError) Unwrap() error        { return ErrInvocationKilled }
func (killedError) RetryableError() bool { return false }

// killableSender keeps a replacement Sender (a test's, the benchmark's)
// from mailing anyone for a killed invocation, as the SES client's
// KillSwitch does for the real one.
type killableSender struct{ notifier.Sender }

func (s killableSender) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	if Killed(ctx) {
		return "", ErrInvocationKilled
	}
	return s.Sender.Send(ctx, deliveryID, to, m)
}
