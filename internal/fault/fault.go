// Package fault injects failures in front of the real AWS clients, as SDK
// middleware, for the behaviours the emulators lack (SES throttling, SQS or
// DynamoDB errors, timeouts, latency). Tests and `make chaos` use it; the
// emulators still serve every call that is not failed.
package fault

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// When says where a rule fires relative to the real call: Before means the
// call never reaches the service; After means the service did the work and
// the caller sees a failure anyway (the "sent but the response was lost"
// case).
type When int

const (
	Before When = iota
	After
)

// Rule fails matching calls.
type Rule struct {
	Service   string // SDK service id, e.g. "SESv2", "DynamoDB", "SQS"; empty matches any
	Operation string // e.g. "SendEmail"; empty matches any
	// Match, if set, narrows the rule by the call's input (e.g. a specific
	// UpdateItem); it must not modify the input.
	Match func(input any) bool
	When  When
	// Times is how many matching calls fail; 0 means every one.
	Times int
	// Err makes the error returned; nil means a throttling error.
	Err func() error
	// Latency is added before the call (or before returning the error).
	Latency time.Duration
	// PassThrough adds only the latency: the call proceeds untouched.
	PassThrough bool
	// Crash stops the calling goroutine dead (runtime.Goexit) instead of
	// returning an error: the process "dies" at this boundary, with no
	// error handling, no release and no delete. The local pollers treat an
	// invocation that ends this way as a crashed Lambda: the message stays
	// in the queue and comes back after its visibility timeout.
	Crash bool
}

// Injector holds rules and counts what it injected.
type Injector struct {
	mu     sync.Mutex
	rules  []*ruleState
	choose Chooser
}

// Chooser decides, once per call and before it, whether the call fails and
// how: the chaos campaign's seeded random choice. ok=false lets the call
// through untouched; otherwise the returned rule fires at its When (Times
// and Match are ignored). It sees the call's context, so it can tell a
// stage invocation (where a crash is survivable) from a poller's loop.
type Chooser func(ctx context.Context, service, operation string, input any) (r Rule, ok bool)

// Choose installs a Chooser, consulted before the fixed rules.
func (in *Injector) Choose(c Chooser) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.choose = c
}

type ruleState struct {
	Rule
	fired int
}

// New returns an injector with the rules.
func New(rules ...Rule) *Injector {
	in := &Injector{}
	for _, r := range rules {
		in.Add(r)
	}
	return in
}

// Add adds a rule.
func (in *Injector) Add(r Rule) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = append(in.rules, &ruleState{Rule: r})
}

// Fired reports how many times rules for service/operation fired.
func (in *Injector) Fired(service, operation string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, r := range in.rules {
		if (r.Service == "" || r.Service == service) && (r.Operation == "" || r.Operation == operation) {
			n += r.fired
		}
	}
	return n
}

// take returns the first rule that fires for this call, counting it.
func (in *Injector) take(service, operation string, input any, when When) (*Rule, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if r.When != when || (r.Service != "" && r.Service != service) || (r.Operation != "" && r.Operation != operation) {
			continue
		}
		if r.Match != nil && !r.Match(input) {
			continue
		}
		if r.Times > 0 && r.fired >= r.Times {
			continue
		}
		r.fired++
		rule := r.Rule
		return &rule, true
	}
	return nil, false
}

// Throttling is the error an overloaded AWS service returns.
func Throttling() error {
	return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded (injected)", Fault: smithy.FaultClient}
}

// Permanent is a non-retryable rejection (SES MessageRejected).
func Permanent() error {
	return &smithy.GenericAPIError{Code: "MessageRejected", Message: "Email address is not verified (injected)", Fault: smithy.FaultClient}
}

// ErrInjected marks injected failures that are not API errors (timeouts).
var ErrInjected = errors.New("injected fault")

// Timeout is what a client sees when the call's deadline passes.
func Timeout() error { return fmt.Errorf("%w: %w", ErrInjected, context.DeadlineExceeded) }

// Option installs the injector on an SDK config (see awsclient.Option).
func (in *Injector) Option() func(*aws.Config) {
	return func(cfg *aws.Config) {
		cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("criticizer-fault",
				func(ctx context.Context, in2 middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
					chosen, ok := in.chosen(ctx, svc, op, in2.Parameters)
					if ok && chosen.When == Before {
						if err := in.fail(ctx, &chosen); err != nil {
							return middleware.InitializeOutput{}, middleware.Metadata{}, err
						}
					}
					if r, ok := in.take(svc, op, in2.Parameters, Before); ok {
						if err := in.fail(ctx, r); err != nil {
							return middleware.InitializeOutput{}, middleware.Metadata{}, err
						}
					}
					out, md, err := next.HandleInitialize(ctx, in2)
					if err != nil {
						return out, md, err
					}
					if ok && chosen.When == After {
						if err := in.fail(ctx, &chosen); err != nil {
							return middleware.InitializeOutput{}, md, err
						}
					}
					if r, ok := in.take(svc, op, in2.Parameters, After); ok {
						return middleware.InitializeOutput{}, md, in.fail(ctx, r)
					}
					return out, md, nil
				}), middleware.Before)
		})
	}
}

func (in *Injector) chosen(ctx context.Context, service, operation string, input any) (Rule, bool) {
	in.mu.Lock()
	c := in.choose
	in.mu.Unlock()
	if c == nil {
		return Rule{}, false
	}
	return c(ctx, service, operation, input)
}

func (in *Injector) fail(ctx context.Context, r *Rule) error {
	if r.Latency > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.Latency):
		}
	}
	if r.Crash {
		runtime.Goexit()
	}
	if r.PassThrough {
		return nil
	}
	if r.Err != nil {
		return r.Err()
	}
	return Throttling()
}

// InternalError is a 5xx from an AWS service (InternalServerError,
// InternalFailure), retryable.
func InternalError() error {
	return &smithy.GenericAPIError{Code: "InternalServerError", Message: "We encountered an internal error (injected)", Fault: smithy.FaultServer}
}

// TooManyRequests is SES's throttle (TooManyRequestsException, HTTP 429).
func TooManyRequests() error {
	return &smithy.GenericAPIError{Code: "TooManyRequestsException", Message: "Too many requests (injected)", Fault: smithy.FaultClient}
}
