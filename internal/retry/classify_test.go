package retry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// check classifies err at testNow and asserts the class, the retryability
// the class implies and that the original error is still reachable.
func check(t *testing.T, err error, want Class) *Error {
	t.Helper()
	c := ClassifyAt(err, testNow)
	if c == nil {
		t.Fatalf("ClassifyAt(%v) = nil", err)
	}
	if c.Class != want {
		t.Errorf("ClassifyAt(%T %v).Class = %s, want %s", err, err, c.Class, want)
	}
	if c.Retryable() != want.Retryable() {
		t.Errorf("ClassifyAt(%v).Retryable() = %v, want %v", err, c.Retryable(), want.Retryable())
	}
	if !errors.Is(c, err) {
		t.Errorf("classification lost the original error %v", err)
	}
	return c
}

// awsResponseError builds the error chain the AWS SDK returns for an HTTP
// error response: OperationError → awshttp.ResponseError →
// smithyhttp.ResponseError → API error.
func awsResponseError(status int, header http.Header, api error) error {
	if header == nil {
		header = http.Header{}
	}
	return &smithy.OperationError{
		ServiceID:     "SESv2",
		OperationName: "SendEmail",
		Err: &awshttp.ResponseError{
			RequestID: "req-123",
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: header}},
				Err:      api,
			},
		},
	}
}

func refusedDial(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
		t.Skip("port was reused before dialing")
	}
	return err
}

func readTimeout(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen: %v", err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("cannot dial: %v", err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("read past deadline succeeded")
	}
	return err
}

// R-STAGE-1 row "Network transient | DNS timeout, socket timeout, TCP reset,
// 502/503/504 from upstream | Retryable".
func TestClassify_NetworkTransient(t *testing.T) {
	refused := refusedDial(t)
	if _, ok := errors.AsType[*net.OpError](refused); !ok {
		t.Fatalf("dial error %T is not *net.OpError", refused)
	}
	check(t, refused, NetworkError)
	check(t, fmt.Errorf("fetch diff: %w", refused), NetworkError)

	check(t, readTimeout(t), NetworkTimeout)
	check(t, &net.DNSError{Err: "i/o timeout", Name: "api.github.com", IsTimeout: true}, NetworkTimeout)
	check(t, &net.DNSError{Err: "server misbehaving", Name: "api.github.com", IsTemporary: true}, NetworkError)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	check(t, reset, NetworkError)
	check(t, fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), NetworkError)
	check(t, &smithyhttp.RequestSendError{Err: errors.New("dial tcp: lookup sqs: no such host")}, NetworkError)

	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	check(t, ctx.Err(), NetworkTimeout)
	check(t, fmt.Errorf("invoke: %w", context.DeadlineExceeded), NetworkTimeout)

	for _, status := range []int{502, 503, 504} {
		c := check(t, awsResponseError(status, nil, &smithy.GenericAPIError{Code: "Unmapped"}), Upstream5xx)
		if c.Status != status {
			t.Errorf("Status = %d, want %d", c.Status, status)
		}
		check(t, &HTTPStatusError{Status: status, Op: "github.GetPullRequest"}, Upstream5xx)
	}
}

// R-STAGE-1 row "Network transient | ... socket timeout ... | Retryable":
// context.Canceled is the Lambda runtime giving up on the invocation, not a
// defect of the message, so it is retried as a timeout (see ClassifyAt).
func TestClassify_ContextCanceledIsTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check(t, ctx.Err(), NetworkTimeout)
}

// R-STAGE-1 row "Rate limiting / quota throttling | HTTP 429, provider
// rate_limit_exceeded, temporary quota windows | Retryable | Honor upstream
// Retry-After header when present".
func TestClassify_RateLimiting(t *testing.T) {
	c := check(t, &HTTPStatusError{Status: 429, RetryAfter: "7", Op: "openai.Chat"}, RateLimited)
	if c.RetryAfter != 7*time.Second || c.Status != 429 || c.Op != "openai.Chat" {
		t.Errorf("got RetryAfter=%v Status=%d Op=%q", c.RetryAfter, c.Status, c.Op)
	}

	for _, code := range []string{
		"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
		"TooManyRequestsException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
		"SlowDown", "LimitExceededException", "TransactionInProgressException",
	} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), RateLimited)
	}

	hdr := http.Header{"Retry-After": []string{"30"}}
	c = check(t, awsResponseError(429, hdr, &smithy.GenericAPIError{Code: "TooManyRequestsException"}), RateLimited)
	if c.RetryAfter != 30*time.Second || c.Op != "SESv2.SendEmail" {
		t.Errorf("got RetryAfter=%v Op=%q", c.RetryAfter, c.Op)
	}

	// GitHub signals secondary rate limits with 403 and Retry-After.
	check(t, &HTTPStatusError{Status: 403, RetryAfter: "60"}, RateLimited)
	// The SDK's own client-side retry quota.
	check(t, fmt.Errorf("failed to get rate limit token, %w", ratelimit.QuotaExceededError{Available: 0, Requested: 5}), RateLimited)
}

// R-STAGE-1 row "Upstream internal service errors | LLM internal_error, webhook
// provider 5xx | Retryable".
func TestClassify_UpstreamInternal(t *testing.T) {
	check(t, &HTTPStatusError{Status: 500, Op: "llm.Complete"}, Upstream5xx)
	check(t, &HTTPStatusError{Status: 529, Op: "llm.Complete"}, Upstream5xx) // provider "overloaded"
	check(t, awsResponseError(500, nil, &smithy.GenericAPIError{Code: "InternalServerError"}), Upstream5xx)
	// An unmapped code with a server fault and no response.
	check(t, &smithy.GenericAPIError{Code: "Brand new", Fault: smithy.FaultServer}, Upstream5xx)
}

// R-STAGE-1 row "Idempotency or optimistic-lock conflicts | Duplicate write race,
// version conflict | Retryable | Safe only for idempotent operations".
func TestClassify_Conflict(t *testing.T) {
	for _, code := range []string{"ConditionalCheckFailedException", "TransactionConflictException", "TransactionCanceledException"} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), Conflict)
	}
	check(t, &HTTPStatusError{Status: 409}, Conflict)
	check(t, &HTTPStatusError{Status: 412}, Conflict)
	check(t, Transient(InFlight, errors.New("lease held by worker b")), InFlight)

	// Safe only for idempotent operations: a non-idempotent caller opts out.
	c := ClassifyAt(Permanent(Conflict, errors.New("version conflict on append")), testNow)
	if c.Class != Conflict || c.Retryable() {
		t.Errorf("Permanent(Conflict) = %s retryable=%v, want CONFLICT non-retryable", c.Class, c.Retryable())
	}
}

// R-STAGE-1 row "Validation and schema errors | Missing required fields, malformed
// JSON payload, schema mismatch | Non-retryable".
func TestClassify_ValidationSchema(t *testing.T) {
	var v struct{ Attempt int }
	syntaxErr := json.Unmarshal([]byte(`{"attempt":`), &v)
	if _, ok := errors.AsType[*json.SyntaxError](syntaxErr); !ok {
		t.Fatalf("want *json.SyntaxError, got %T", syntaxErr)
	}
	check(t, fmt.Errorf("decode stage message: %w", syntaxErr), SchemaInvalid)

	typeErr := json.Unmarshal([]byte(`{"attempt":"three"}`), &v)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](typeErr); !ok {
		t.Fatalf("want *json.UnmarshalTypeError, got %T", typeErr)
	}
	check(t, typeErr, SchemaInvalid)

	for _, code := range []string{"ValidationException", "SerializationException", "InvalidParameterValue", "BadRequestException"} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), SchemaInvalid)
	}
	check(t, &HTTPStatusError{Status: 400}, SchemaInvalid)
	check(t, &HTTPStatusError{Status: 422}, SchemaInvalid)
	check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: "SomethingUnmapped"}), SchemaInvalid)
}

// R-STAGE-1 row "Authentication/authorization | Invalid API key, expired token
// without refresh path, permission denied (403) | Non-retryable".
func TestClassify_AuthDenied(t *testing.T) {
	for _, code := range []string{
		"AccessDeniedException", "UnrecognizedClientException", "InvalidClientTokenId",
		"ExpiredTokenException", "InvalidSignatureException", "MissingAuthenticationToken",
	} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), AuthDenied)
	}
	check(t, awsResponseError(403, nil, &smithy.GenericAPIError{Code: "Unmapped"}), AuthDenied)
	check(t, &HTTPStatusError{Status: 401, Op: "github.GetPullRequest"}, AuthDenied)
	check(t, &HTTPStatusError{Status: 403}, AuthDenied)
}

// R-STAGE-1 row "Not found / permanent resource state | 404 for immutable input
// artifact, deleted destination channel | Non-retryable".
func TestClassify_NotFound(t *testing.T) {
	for _, code := range []string{
		"ResourceNotFoundException", "NotFoundException", "AWS.SimpleQueueService.NonExistentQueue",
		"QueueDoesNotExist", "NoSuchKey", "NoSuchBucket", "com.amazonaws.sqs#QueueDoesNotExist",
	} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), NotFound)
	}
	check(t, &HTTPStatusError{Status: 404}, NotFound)
	check(t, &HTTPStatusError{Status: 410}, NotFound)
	check(t, awsResponseError(404, nil, &smithy.GenericAPIError{Code: "Unmapped"}), NotFound)
}

// R-STAGE-1 row "Content policy / hard business-rule reject | Moderation block,
// explicit deny policy | Non-retryable".
func TestClassify_PolicyRejected(t *testing.T) {
	for _, code := range []string{"MessageRejected", "MailFromDomainNotVerifiedException", "AccountSuspendedException", "SendingPausedException"} {
		check(t, awsResponseError(400, nil, &smithy.GenericAPIError{Code: code}), PolicyRejected)
	}
	check(t, &HTTPStatusError{Status: 451}, PolicyRejected)
	check(t, Permanent(PolicyRejected, errors.New("moderation: blocked")), PolicyRejected)
}

// R-STAGE-1 row "Configuration/runtime bug | Null dereference, illegal state,
// invariant violation, bad deploy config | Non-retryable".
func TestClassify_RuntimeBug(t *testing.T) {
	err := func() (err error) {
		defer Recover(&err)
		var m map[string]int
		m["boom"]++ // a real runtime panic
		return nil
	}()
	pe, ok := errors.AsType[*PanicError](err)
	if !ok {
		t.Fatalf("Recover produced %T, want *PanicError", err)
	}
	if len(pe.Stack) == 0 {
		t.Error("PanicError has no stack")
	}
	check(t, fmt.Errorf("llm stage: %w", err), RuntimeBug)

	// A panic whose value is a network error is still a bug.
	check(t, NewPanicError(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), RuntimeBug)

	// A non-pointer decode target is a programming error.
	var notAPointer any = struct{}{}
	check(t, json.Unmarshal([]byte(`{}`), notAPointer), RuntimeBug)
}

// R-STAGE-1: "All failures MUST be classified" — anything unrecognised is
// UNKNOWN, retryable within the R-STAGE-3 budget (see Class.Retryable).
func TestClassify_Unknown(t *testing.T) {
	check(t, errors.New("something odd"), Unknown)
	// A file-system errno is a net.Error by method set but not a network failure.
	check(t, &fs.PathError{Op: "open", Path: "/tmp/x", Err: syscall.ENOENT}, Unknown)
	check(t, &HTTPStatusError{Status: 418}, Unknown)
	if ClassifyAt(nil, testNow) != nil {
		t.Error("ClassifyAt(nil) != nil")
	}
}

// R-STAGE-2: "Retries MUST stop immediately when a failure is reclassified
// to non-retryable" — so a caller's classification, anywhere in the chain,
// takes precedence over what the wrapped error looks like.
func TestClassify_ExistingErrorWins(t *testing.T) {
	inner := refusedDial(t)
	err := fmt.Errorf("notify: %w", Permanent(PolicyRejected, inner))
	c := check(t, err, PolicyRejected)
	if c.Retryable() {
		t.Error("Permanent classification was overridden")
	}
	if got := c.Error(); got != err.Error() {
		t.Errorf("Error() = %q, want the outer message %q", got, err.Error())
	}
	if !errors.Is(c, inner) {
		t.Error("lost the innermost error")
	}

	// A caller-built *Error without a class is completed from its cause.
	c = ClassifyAt(&Error{Op: "ses.SendEmail", Err: &HTTPStatusError{Status: 503}}, testNow)
	if c.Class != Upstream5xx || c.Status != 503 || c.Op != "ses.SendEmail" {
		t.Errorf("got %s status=%d op=%q", c.Class, c.Status, c.Op)
	}
}
