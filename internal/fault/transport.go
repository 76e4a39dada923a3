package fault

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Option installs the injector on an SDK config (an awsclient.Option): the
// config's HTTP client is wrapped, so every client built from it sends
// through the injector, below the SDK's retry loop; and a small Initialize
// step puts each operation's input on the context, for Rule.Match.
func (in *Injector) Option() func(*aws.Config) {
	return func(cfg *aws.Config) {
		next := cfg.HTTPClient
		if next == nil {
			next = http.DefaultClient
		}
		cfg.HTTPClient = &client{in: in, next: next}
		cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("criticizer-fault-input",
				func(ctx context.Context, x middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					return next.HandleInitialize(context.WithValue(ctx, inputKey{}, x.Parameters), x)
				}), middleware.Before)
		})
	}
}

type inputKey struct{}

// client is the faulty HTTP client (aws.HTTPClient).
type client struct {
	in   *Injector
	next aws.HTTPClient
}

// Do sends one request: untouched, or failed the way the chosen rule says.
func (c *client) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	r, ok := c.in.pick(ctx, svc, op, ctx.Value(inputKey{}))
	if !ok {
		return c.next.Do(req)
	}
	switch r.Kind {
	case Throttle, Reject:
		return errorResponse(req, svc, r), nil
	case LoseRequest:
		return nil, reset(req, "write")
	case ServerError:
		if r.When == After {
			if err := c.doAndDiscard(req); err != nil {
				return nil, err
			}
		}
		return errorResponse(req, svc, r), nil
	case LoseAnswer:
		if err := c.doAndDiscard(req); err != nil {
			return nil, err
		}
		return nil, reset(req, "read")
	case SlowAnswer:
		if err := c.doAndDiscard(req); err != nil {
			return nil, err
		}
		d := r.Latency
		if d <= 0 {
			d = 50 * time.Millisecond
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
		return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: clientTimeout{}}
	case Latency:
		if err := sleep(ctx, r.Latency); err != nil {
			return nil, err
		}
		return c.next.Do(req)
	case Crash:
		if r.When == After {
			_ = c.doAndDiscard(req)
		}
		runtime.Goexit()
	case Stall:
		if r.When == After {
			if err := c.doAndDiscard(req); err != nil {
				return nil, err
			}
		}
		stall(ctx, r)
		return nil, reset(req, "read")
	}
	return c.next.Do(req)
}

// stall waits until r.Until(ctx) or r.Latency (default 1 minute), ignoring
// ctx's own end (Stall).
func stall(ctx context.Context, r Rule) {
	d := r.Latency
	if d <= 0 {
		d = time.Minute
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if r.Until != nil && r.Until(ctx) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// doAndDiscard lets the service do the work and throws its answer away.
func (c *client) doAndDiscard(req *http.Request) error {
	resp, err := c.next.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// reset is the error a dropped TCP connection gives net/http.
func reset(req *http.Request, op string) error {
	return &url.Error{Op: req.Method, URL: req.URL.String(),
		Err: &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}}
}

// clientTimeout is the error http.Client returns when its Timeout passes
// while it awaits the answer.
type clientTimeout struct{}

func (clientTimeout) Error() string {
	return "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
}
func (clientTimeout) Timeout() bool   { return true }
func (clientTimeout) Temporary() bool { return true }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
