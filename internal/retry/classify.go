package retry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Classify maps err to a failure class (R-STAGE-1). It returns nil for a nil err
// and otherwise a non-nil *Error whose Err is err itself, so the original
// chain is never lost. Retry-After HTTP-dates are resolved against the
// current time; use ClassifyAt for a fixed clock.
func Classify(err error) *Error {
	return ClassifyAt(err, time.Now())
}

// ClassifyAt is Classify with an explicit clock for Retry-After HTTP-dates.
//
// The first rule that matches wins, in this order:
//
//  1. an *Error anywhere in the chain: the caller already decided;
//  2. a *PanicError → RuntimeBug;
//  3. context.DeadlineExceeded or any error reporting Timeout() → NetworkTimeout;
//  4. context.Canceled → NetworkTimeout (see below);
//  5. other network failures (net.Error, *net.OpError, *url.Error,
//     ECONNRESET, ECONNREFUSED, EPIPE, io.ErrUnexpectedEOF, SDK send errors)
//     → NetworkError;
//  6. *json.SyntaxError, *json.UnmarshalTypeError → SchemaInvalid
//     (*json.InvalidUnmarshalError is a programming error → RuntimeBug);
//  7. the AWS SDK's client-side retry quota → RateLimited;
//  8. a smithy.APIError with a known error code (see awsCodes);
//  9. the HTTP status of an AWS response error or an *HTTPStatusError
//     (see StatusClass; 403 with Retry-After is RateLimited);
//  10. a smithy.APIError with a server fault → Upstream5xx;
//  11. anything else → Unknown.
//
// context.Canceled is a timeout, not a bug: in a Lambda worker the
// invocation context is cancelled when the runtime gives up on the
// invocation (deadline, shutdown), so the attempt ran out of time for
// reasons unrelated to the message and must be retried. Stage code never
// cancels its own context to signal failure; it returns a classified error.
func ClassifyAt(err error, now time.Time) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return fromExisting(err, e, now)
	}
	c := &Error{Class: Unknown, Err: err}
	annotateAWS(c, err, now)
	switch {
	case isPanic(err):
		c.Class = RuntimeBug
	case isTimeout(err), errors.Is(err, context.Canceled):
		c.Class = NetworkTimeout
	case isNetwork(err):
		c.Class = NetworkError
	default:
		c.Class = classifyPayload(err, c, now)
	}
	return c
}

// fromExisting returns e, the classified error found in err's chain. When err
// wraps e, the result is a copy re-rooted at err so that context added after
// classification ("notify: ...") is kept. A caller-built *Error without a
// Class is completed from the error it wraps.
func fromExisting(err error, e *Error, now time.Time) *Error {
	if e.Class != "" && err == error(e) {
		return e
	}
	c := *e
	if c.Class == "" {
		inner := ClassifyAt(c.Err, now)
		if inner == nil {
			inner = &Error{Class: Unknown}
		}
		c.Class = inner.Class
		c.Status = cmp.Or(c.Status, inner.Status)
		c.RetryAfter = cmp.Or(c.RetryAfter, inner.RetryAfter)
		c.Op = cmp.Or(c.Op, inner.Op)
	}
	if err != error(e) {
		c.Err = err
		c.ownText = true
	}
	return &c
}

// classifyPayload handles the rules after the transport ones: JSON, AWS API
// codes and HTTP statuses.
func classifyPayload(err error, c *Error, now time.Time) Class {
	if _, ok := errors.AsType[*json.InvalidUnmarshalError](err); ok {
		return RuntimeBug
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return SchemaInvalid
	}
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return SchemaInvalid
	}
	if _, ok := errors.AsType[ratelimit.QuotaExceededError](err); ok {
		return RateLimited
	}
	api, isAPI := errors.AsType[smithy.APIError](err)
	if isAPI {
		if class, ok := awsCodeClass(api.ErrorCode()); ok {
			return class
		}
	}
	if he, ok := errors.AsType[*HTTPStatusError](err); ok {
		c.Status = he.Status
		if c.Op == "" {
			c.Op = he.Op
		}
		if d, ok := ParseRetryAfter(he.RetryAfter, now); ok {
			c.RetryAfter = d
		}
	}
	if c.Status != 0 {
		if c.Status == 403 && c.RetryAfter > 0 {
			return RateLimited
		}
		if class := StatusClass(c.Status); class != Unknown {
			return class
		}
	}
	if isAPI && api.ErrorFault() == smithy.FaultServer {
		return Upstream5xx
	}
	return Unknown
}

// annotateAWS copies what the AWS SDK knows about the failed call into c:
// the operation name, the HTTP status and a Retry-After header.
func annotateAWS(c *Error, err error, now time.Time) {
	if op, ok := errors.AsType[*smithy.OperationError](err); ok {
		c.Op = op.ServiceID + "." + op.OperationName
	}
	// *awshttp.ResponseError delegates As to its embedded
	// *smithyhttp.ResponseError, so this matches both.
	re, ok := errors.AsType[*smithyhttp.ResponseError](err)
	if !ok || re.Response == nil || re.Response.Response == nil {
		return
	}
	c.Status = re.Response.StatusCode
	if d, ok := ParseRetryAfter(re.Response.Header.Get("Retry-After"), now); ok {
		c.RetryAfter = d
	}
}

func isPanic(err error) bool {
	_, ok := errors.AsType[*PanicError](err)
	return ok
}

// isTimeout reports whether any error in the tree says it is a timeout. It
// walks the whole tree rather than stopping at the first net.Error because
// wrappers such as *url.Error and *net.OpError answer for their cause only
// when the cause implements Timeout itself.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return walk(err, func(e error) bool {
		t, ok := e.(interface{ Timeout() bool })
		return ok && t.Timeout()
	})
}

var networkErrnos = []error{
	syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED,
	syscall.EPIPE, syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ENETDOWN,
}

// isNetwork reports a transport failure that is not a timeout. A bare
// syscall.Errno satisfies net.Error, so errnos are only accepted from the
// explicit list: ENOENT from a file is not a network failure.
func isNetwork(err error) bool {
	for _, target := range networkErrnos {
		if errors.Is(err, target) {
			return true
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	return walk(err, func(e error) bool {
		switch e := e.(type) {
		case *net.OpError, *net.DNSError, *url.Error:
			return true
		case syscall.Errno:
			return false
		case interface{ ConnectionError() bool }:
			// smithy-go's *RequestSendError: the SDK could not send the
			// request or read the response.
			return e.ConnectionError()
		case net.Error:
			return true
		}
		return false
	})
}

// walk visits err's tree depth-first (Unwrap() error and Unwrap() []error)
// and reports whether visit returned true for any node. It stops after a
// fixed number of nodes so that a cyclic Unwrap cannot hang a worker.
func walk(err error, visit func(error) bool) bool {
	const maxNodes = 256
	stack := []error{err}
	for n := 0; len(stack) > 0 && n < maxNodes; n++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		if visit(e) {
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			stack = append(stack, u.Unwrap())
		case interface{ Unwrap() []error }:
			kids := u.Unwrap()
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, kids[i])
			}
		}
	}
	return false
}
