// Package fault injects the failures AWS really produces, below the SDK: at
// the HTTP client every SDK client sends through, inside the SDK's retry
// loop. A lost answer after the service did the work, a 5xx after the work,
// an answer slower than the client's timeout, a throttle with Retry-After —
// each reaches the SDK exactly as a real one would, so whether the SDK
// resends a request (and a non-idempotent call is done twice) is part of
// what a test sees. The request itself still goes to the real emulator
// whenever the fault is one that lets the service do the work.
//
// Tests and `make chaos` use it; nothing in a deployed function does.
package fault

import (
	"context"
	"sync"
	"time"
)

// Kind is what a fault does to one HTTP exchange with a service.
type Kind int

const (
	// Throttle refuses the request before any work: 400
	// ThrottlingException (SES v2: 429 TooManyRequestsException; S3: 503
	// SlowDown), with a Retry-After header when RetryAfter is set.
	Throttle Kind = iota
	// LoseRequest resets the connection before the request reaches the
	// service: nothing was done, but the caller cannot know that.
	LoseRequest
	// LoseAnswer lets the service do the work, then resets the connection
	// before the answer reaches the caller.
	LoseAnswer
	// ServerError answers 500 InternalServerError: with When=After the
	// service did the work first (a 5xx after the work), with Before it did
	// not.
	ServerError
	// SlowAnswer lets the service do the work and holds the answer past the
	// client's timeout: after Latency the caller sees the timeout error the
	// HTTP client would return.
	SlowAnswer
	// Reject is a permanent refusal before any work: SES v2 400
	// MessageRejected, other services 400 ValidationException.
	Reject
	// Latency delays the request by Latency and lets it through untouched.
	Latency
	// Crash stops the calling goroutine dead (runtime.Goexit), before the
	// request (When=Before) or after the service did the work (After): the
	// process "dies" at this boundary, with no error handling, no release
	// and no delete. The local pollers treat an invocation that ends this
	// way as a crashed Lambda: the message comes back after its visibility
	// timeout.
	Crash
	// Stall hangs the exchange, before the request (When=Before) or after
	// the service did the work (After), until Until reports true — it is
	// asked every few milliseconds, whatever the request's context says —
	// or Latency passes (default 1 minute); then the caller sees a reset
	// connection. It plays a call that never comes back, so that the
	// invocation making it runs into its function timeout and is killed
	// there (the chaos campaign's timeout_kill: Until is "the poller has
	// killed this invocation"). The request's context is not obeyed: a
	// caller that finishes writes under context.WithoutCancel, or whose
	// deadline is its function's, would otherwise answer at the very
	// instant it is killed.
	Stall
)

var kindNames = [...]string{"throttle", "lose_request", "lose_answer", "server_error", "slow_answer", "reject", "latency", "crash", "stall"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// When says, for the kinds that can be either, whether the fault comes
// before the service does the work or after.
type When int

const (
	Before When = iota
	After
)

// Rule fails matching exchanges.
type Rule struct {
	Service   string // SDK service id, e.g. "SESv2", "DynamoDB", "SQS"; empty matches any
	Operation string // e.g. "SendEmail"; empty matches any
	// Match, if set, narrows the rule by the operation's input (e.g. one
	// UpdateItem); it must not modify the input.
	Match func(input any) bool
	Kind  Kind
	When  When // ServerError, Crash and Stall only
	// Times is how many matching exchanges fail; 0 means every one. Each
	// attempt the SDK makes is an exchange of its own.
	Times int
	// Latency is the delay of a Latency fault, and how long a SlowAnswer
	// holds the answer before the timeout (default 50 ms).
	Latency time.Duration
	// RetryAfter, if set, is sent as the Retry-After header of a Throttle
	// or ServerError answer.
	RetryAfter time.Duration
	// Until ends a Stall once it reports true (it is given the request's
	// context); nil stalls for Latency.
	Until func(context.Context) bool
}

func (r *Rule) matches(service, operation string, input any) bool {
	return (r.Service == "" || r.Service == service) && (r.Operation == "" || r.Operation == operation) &&
		(r.Match == nil || r.Match(input))
}

// Chooser decides, once per exchange and before it, whether the exchange
// fails and how: the chaos campaign's seeded random choice. ok=false lets
// it through untouched; otherwise the returned rule applies (its Service,
// Operation, Match and Times are ignored). It sees the call's context, so
// it can tell a stage invocation (where a crash is survivable) from a
// poller's loop.
type Chooser func(ctx context.Context, service, operation string, input any) (r Rule, ok bool)

// Injector holds rules and counts what it injected.
type Injector struct {
	mu     sync.Mutex
	rules  []*ruleState
	choose Chooser
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

// Choose installs a Chooser, consulted before the fixed rules.
func (in *Injector) Choose(c Chooser) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.choose = c
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

// pick returns the fault for one exchange, if any: the chooser's, else the
// first fixed rule that matches and has firings left (counted).
func (in *Injector) pick(ctx context.Context, service, operation string, input any) (Rule, bool) {
	in.mu.Lock()
	c := in.choose
	in.mu.Unlock()
	if c != nil {
		if r, ok := c(ctx, service, operation, input); ok {
			return r, true
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if !r.matches(service, operation, input) || (r.Times > 0 && r.fired >= r.Times) {
			continue
		}
		r.fired++
		return r.Rule, true
	}
	return Rule{}, false
}
