package deadletter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/criticizer/criticizer/internal/redact"
	"github.com/criticizer/criticizer/internal/redact/redacttest"
	"net/http"
	"strings"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/criticizer/criticizer/internal/retry"
)

var (
	t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(3 * time.Minute)
)

const (
	plantPrompt = "You are a code reviewer. Confidential design: project Nightjar launches Q3."
	plantDiff   = "diff --git a/secret_plan.go b/secret_plan.go\n+const launch = \"nightjar\""
)

// plantedFailure carries every planted secret in the error chain, the
// context and the original body.
func plantedFailure() Failure {
	secrets := redacttest.Planted()
	err := fmt.Errorf("notify stage: %w", &smithy.OperationError{
		ServiceID: "SESv2", OperationName: "SendEmail",
		Err: &awshttp.ResponseError{
			RequestID: "req-7f3a",
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400, Header: http.Header{}}},
				Err:      &smithy.GenericAPIError{Code: "MessageRejected", Message: "rejected mail for " + redacttest.PlantEmail + ": " + secrets},
			},
		},
	})
	return Failure{
		Stage:          StageNotify,
		JobID:          "job-42",
		Err:            err,
		Attempts:       1,
		FirstFailureAt: t0,
		LastFailureAt:  t1,
		Context: map[string]string{
			"request_id":             "lambda-req-1",
			"changelist_id":          "cl-99",
			"idempotency_key_sha256": "3f2a9c1b7d4e5f60",
			"prompt":                 plantPrompt,
			"diff":                   plantDiff,
			"recipient":              redacttest.PlantEmail,
			"Authorization":          "Bearer " + redacttest.PlantBearer,
			"api_key":                redacttest.PlantAPIKey,
			"note":                   secrets, // a free-text value with secrets
		},
		Message: Original{
			MessageID: "msg-0001",
			Queue:     "https://sqs.us-east-1.amazonaws.com/123456789012/notify",
			Body:      `{"job_id":"job-42","recipient":"` + redacttest.PlantEmail + `","debug":` + mustJSON(secrets) + `}`,
		},
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// allStrings returns every string (keys and values) in a decoded JSON value,
// so the check also covers text that encoding/json escaped (\u003c, \u0026).
func allStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case map[string]any:
		var out []string
		for k, x := range v {
			out = append(out, k)
			out = append(out, allStrings(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, allStrings(x)...)
		}
		return out
	}
	return nil
}

// R-STAGE-4: "sanitized_context MUST exclude secrets, access tokens, API
// keys, full prompts containing sensitive data, and raw PII." and rule 2:
// "Stack traces MUST be redacted if they contain sensitive literals."
// Every kind of secret is planted in the error chain, the context and the
// original body; none may appear anywhere in the encoded envelope.
func TestNew_NoPlantedSecretSurvivesJSON(t *testing.T) {
	env := New(plantedFailure())
	env.Annotate("triage", "checked with "+redacttest.PlantEmail+" using password="+redacttest.PlantPassword, t1)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	assertNoLiterals(t, "envelope JSON", string(b))
	for _, lit := range []string{plantPrompt, "Nightjar", "nightjar", plantDiff, "secret_plan.go"} {
		if strings.Contains(string(b), lit) {
			t.Errorf("envelope JSON contains %q", lit)
		}
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, s := range allStrings(generic) {
		assertNoLiterals(t, "decoded string", s)
		if strings.Contains(s, "Nightjar") || strings.Contains(s, "nightjar") {
			t.Errorf("prompt or diff content survived: %q", s)
		}
	}
	// What must stay for triage does.
	ctx := env.SanitizedContext
	for k, want := range map[string]string{
		"request_id": "lambda-req-1", "changelist_id": "cl-99", "idempotency_key_sha256": "3f2a9c1b7d4e5f60",
		"stage": "notify", "attempts": "1", "error_class": "POLICY_REJECTED", "upstream_status": "400",
		"op": "SESv2.SendEmail", "aws_request_id": "req-7f3a", "original_body_redacted": "true",
	} {
		if ctx[k] != want {
			t.Errorf("sanitized_context[%q] = %q, want %q", k, ctx[k], want)
		}
	}
	for _, k := range []string{"prompt", "diff", "recipient", "Authorization", "api_key"} {
		if _, ok := ctx[k]; ok {
			t.Errorf("sanitized_context kept %q", k)
		}
	}
	if !strings.Contains(env.Original.Body, redact.Email("Alice.Reviewer@Example.com")) {
		t.Errorf("original body lost the email pseudonym: %s", env.Original.Body)
	}
}

// R-STAGE-4: error_class, last_stack, sanitized_context; rule 3: "Include
// first_failure_at, last_failure_at, and stage to support replay triage."
func TestNew_RequiredFields(t *testing.T) {
	env := New(Failure{
		Stage: StageLLM, JobID: "job-1", Attempts: 5,
		Err:            fmt.Errorf("llm: %w", &retry.HTTPStatusError{Status: 503, Op: "bedrock.Converse"}),
		FirstFailureAt: t0.In(time.FixedZone("CET", 3600)), LastFailureAt: t1,
		Message: Original{MessageID: "m-1", Body: `{"job_id":"job-1"}`, Queue: "llm"},
	})
	if env.SchemaVersion != SchemaVersion || env.Stage != "llm" || env.ErrorClass != "UPSTREAM_5XX" || !env.Retryable {
		t.Errorf("got %+v", env)
	}
	if !env.FirstFailureAt.Equal(t0) || env.FirstFailureAt.Location() != time.UTC || !env.LastFailureAt.Equal(t1) {
		t.Errorf("times: %v %v", env.FirstFailureAt, env.LastFailureAt)
	}
	if !strings.Contains(env.LastStack, "bedrock.Converse: UPSTREAM_5XX (HTTP 503)") || !strings.Contains(env.LastStack, "*retry.HTTPStatusError") {
		t.Errorf("last_stack = %q", env.LastStack)
	}
	if env.ID != EnvelopeID("llm", "m-1", t0) || env.ID == EnvelopeID("fetch", "m-1", t0) || env.ID == EnvelopeID("llm", "m-1", t1) {
		t.Error("id is not derived from stage, message id and first failure")
	}
	sum := sha256.Sum256([]byte(`{"job_id":"job-1"}`))
	if env.Original.Body != `{"job_id":"job-1"}` || env.Original.BodySHA256 != hex.EncodeToString(sum[:]) || env.Original.MessageID != "m-1" || env.Original.Queue != "llm" {
		t.Errorf("original = %+v", env.Original)
	}
	if _, ok := env.SanitizedContext["original_body_redacted"]; ok {
		t.Error("an id-only body was reported as redacted")
	}
	// Same inputs, same id: a retried dead-letter write deduplicates.
	again := New(Failure{Stage: StageLLM, Message: Original{MessageID: "m-1"}, FirstFailureAt: t0, LastFailureAt: t1.Add(time.Hour)})
	if again.ID != env.ID {
		t.Error("id changed with last_failure_at")
	}
}

// R-STAGE-1 "Configuration/runtime bug ... Dead-letter and page operator": the
// panic stack is kept (redacted) in last_stack.
func TestNew_PanicStackRedacted(t *testing.T) {
	err := func() (err error) {
		defer retry.Recover(&err)
		panic("invariant violated for " + redacttest.PlantEmail + " token=" + redacttest.PlantToken)
	}()
	env := New(Failure{Stage: StageFetch, Err: err, Attempts: 1, LastFailureAt: t0})
	if env.ErrorClass != "RUNTIME_BUG" || env.Retryable {
		t.Errorf("class %s retryable %v", env.ErrorClass, env.Retryable)
	}
	if !strings.Contains(env.LastStack, "panic stack:") || !strings.Contains(env.LastStack, "goroutine") {
		t.Errorf("no panic stack in %q", env.LastStack)
	}
	assertNoLiterals(t, "last_stack", env.LastStack)
	if !env.FirstFailureAt.Equal(t0) {
		t.Errorf("first_failure_at defaulted to %v", env.FirstFailureAt)
	}
}

// R-STAGE-3: "If a stage exhausts budget, processing transitions to dead-letter
// with stage-specific metadata": a retryable class with a spent budget.
func TestNew_BudgetExhaustedKeepsRetryableClass(t *testing.T) {
	env := New(Failure{Stage: StageFetch, Err: errors.New("connection flapped"), Attempts: 5, FirstFailureAt: t0, LastFailureAt: t1})
	if env.ErrorClass != "UNKNOWN" || !env.Retryable || env.Attempts != 5 || env.SanitizedContext["attempts"] != "5" {
		t.Errorf("got class=%s retryable=%v attempts=%d", env.ErrorClass, env.Retryable, env.Attempts)
	}
	if env := New(Failure{Stage: StageFetch}); env.ErrorClass != "UNKNOWN" || env.LastStack != "no error recorded" || env.Attempts != 1 {
		t.Errorf("nil error: %+v", env)
	}
}

// R-STAGE-4: "sanitized_context: ... truncated payload hashes/IDs" — every field
// is bounded so the envelope always fits in an SQS message.
func TestNew_BoundsSizes(t *testing.T) {
	big := strings.Repeat("é", 100<<10)
	env := New(Failure{Stage: StageLLM, Err: errors.New(big), Message: Original{Body: big}, Context: map[string]string{"note": big}})
	if len(env.LastStack) > maxStack || len(env.Original.Body) > maxBody || len(env.SanitizedContext["note"]) > maxContextValue {
		t.Errorf("sizes: stack %d body %d note %d", len(env.LastStack), len(env.Original.Body), len(env.SanitizedContext["note"]))
	}
	if env.SanitizedContext["original_body_truncated"] != "true" {
		t.Error("truncated body not flagged")
	}
	b, err := json.Marshal(env)
	if err != nil || !json.Valid(b) {
		t.Fatal("envelope with truncated multi-byte text is not valid JSON")
	}
}

func assertNoLiterals(t *testing.T, where, s string) {
	t.Helper()
	for _, lit := range redacttest.Literals() {
		if strings.Contains(s, lit) {
			t.Errorf("%s: planted literal %q survived", where, lit)
		}
	}
}
