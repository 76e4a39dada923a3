package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/retry"
)

const brModel = "anthropic.claude-3-5-sonnet-20240620-v1:0"

// brConverse wraps the model's text in a Converse response as Bedrock
// sends it (see the SDK's response snapshot for the shape).
func brConverse(text, stopReason string) []byte {
	t, _ := json.Marshal(text)
	return []byte(`{"metrics":{"latencyMs":2741},"output":{"message":{"content":[{"text":` + string(t) + `}],"role":"assistant"}},"stopReason":"` + stopReason + `","usage":{"inputTokens":1364,"outputTokens":212,"totalTokens":1576}}`)
}

// brServer stands in for bedrock-runtime; the client is the real SDK client
// pointed at it, with static credentials and no SDK retries.
func brServer(t *testing.T, h http.HandlerFunc) (*critic.LLM, *atomic.Int32) {
	t.Helper()
	return brServerFor(t, brModel, h)
}

// brServerFor is brServer for another model id.
func brServerFor(t *testing.T, model string, h http.HandlerFunc) (*critic.LLM, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
	})
	m, err := New(client, model)
	if err != nil {
		t.Fatal(err)
	}
	b, err := critic.NewLLM(m)
	if err != nil {
		t.Fatal(err)
	}
	return b, &calls
}

func brReply(status int, body []byte, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", "3b5d7c2e-8a1f-4e6b-9c0d-1a2b3c4d5e6f")
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func TestBedrockReview(t *testing.T) {
	var path, auth string
	var body map[string]any
	b, _ := brServer(t, func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.URL.EscapedPath(), r.Header.Get("Authorization")
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v\n%s", err, raw)
		}
		// Claude likes to fence its JSON.
		brReply(200, brConverse("```json\n"+critictest.SampleReview+"\n```", "end_turn"))(w, r)
	})
	c, err := b.Review(context.Background(), critictest.SampleInput())
	if err != nil {
		t.Fatal(err)
	}
	if path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" {
		t.Errorf("path %q", path)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("not SigV4-signed for bedrock: %q", auth)
	}

	// The request's JSON shape: the prompt, the output limit sized to the
	// findings cap, temperature 0.
	ic, _ := body["inferenceConfig"].(map[string]any)
	if ic["maxTokens"] != float64(400+200*critic.DefaultLLMMaxFindings) || ic["temperature"] != float64(0) {
		t.Errorf("inferenceConfig %v", ic)
	}
	msgs, _ := body["messages"].([]any)
	sys, _ := body["system"].([]any)
	if len(msgs) != 1 || len(sys) != 1 || !strings.Contains(render(msgs), "BEGIN UNTRUSTED DATA") || !strings.Contains(render(sys), "Report at most") {
		t.Errorf("request body %v", body)
	}
	if c.Critic != "bedrock/"+brModel || len(c.Findings) != 2 || c.Findings[0].Rule != "sql-injection" || c.Files != 3 || c.Truncated {
		t.Fatalf("critique %+v", c)
	}
	// The tokens of the response's usage are recorded.
	if c.Usage == nil || c.Usage.InputTokens != 1364 || c.Usage.OutputTokens != 212 {
		t.Errorf("usage %+v", c.Usage)
	}
}

func TestBedrockErrors(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		class     retry.Class
		retryable bool
		after     time.Duration
		code      string
	}{
		// Bedrock names the error in X-Amzn-Errortype; the SDK also reads __type.
		{"throttled", brReply(429, []byte(`{"message":"Too many requests, please wait before trying again."}`),
			"X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"), retry.RateLimited, true, 0, "ThrottlingException"},
		{"throttled with Retry-After", brReply(429, []byte(`{"__type":"ThrottlingException","message":"Too many tokens, please wait before trying again."}`),
			"Retry-After", "12"), retry.RateLimited, true, 12 * time.Second, "ThrottlingException"},
		{"model timeout", brReply(408, []byte(`{"message":"Model has timed out in processing the request. Try your request again."}`),
			"X-Amzn-Errortype", "ModelTimeoutException:http://internal.amazon.com/coral/com.amazon.bedrock/"), retry.NetworkTimeout, true, 0, "ModelTimeoutException"},
		{"service unavailable", brReply(503, []byte(`{"__type":"ServiceUnavailableException","message":"Bedrock is unable to process your request."}`)),
			retry.Upstream5xx, true, 0, "ServiceUnavailableException"},
		{"model not ready", brReply(429, []byte(`{"__type":"ModelNotReadyException","message":"Model is not ready to serve inference requests."}`)),
			retry.RateLimited, true, 0, "ModelNotReadyException"},
		// These two differ from the shared status table (400 and 424).
		{"quota window", brReply(400, []byte(`{"__type":"ServiceQuotaExceededException","message":"Your request exceeds the service quota for your account."}`)),
			retry.RateLimited, true, 0, "ServiceQuotaExceededException"},
		{"model error", brReply(424, []byte(`{"__type":"ModelErrorException","message":"The system encountered an unexpected error during processing. Try your request again.","originalStatusCode":500,"resourceName":"claude"}`)),
			retry.Upstream5xx, true, 0, "ModelErrorException"},
		{"validation", brReply(400, []byte(`{"message":"The model returned the following errors: messages: text content blocks must be non-empty"}`),
			"X-Amzn-Errortype", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"), retry.SchemaInvalid, false, 0, "ValidationException"},
		{"access denied", brReply(403, []byte(`{"__type":"AccessDeniedException","message":"You don't have access to the model with the specified model ID."}`)),
			retry.AuthDenied, false, 0, "AccessDeniedException"},
		{"guardrail", brReply(200, brConverse("Sorry, the model cannot answer this question.", "guardrail_intervened")),
			retry.PolicyRejected, false, 0, ""},
		{"malformed output", brReply(200, brConverse("This change looks reasonable overall; consider more tests.", "end_turn")),
			retry.SchemaInvalid, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, calls := brServer(t, tt.handler)
			_, err := b.Review(context.Background(), critictest.SampleInput())
			if err == nil {
				t.Fatal("no error")
			}
			c := retry.Classify(err)
			if c.Class != tt.class || c.Retryable() != tt.retryable || c.RetryAfter != tt.after {
				t.Fatalf("classified %s (retryable %v, after %v), want %s (%v, %v): %v", c.Class, c.Retryable(), c.RetryAfter, tt.class, tt.retryable, tt.after, err)
			}
			if api, ok := errors.AsType[smithy.APIError](err); tt.code != "" && (!ok || api.ErrorCode() != tt.code) {
				t.Fatalf("SDK error code not %s: %v", tt.code, err)
			}
			if calls.Load() != 1 {
				t.Fatalf("%d calls: the SDK retried", calls.Load())
			}
			if tt.class == retry.SchemaInvalid && tt.retryable && !errors.Is(err, critic.ErrMalformedReply) && tt.code == "" {
				t.Fatalf("not ErrMalformedReply: %v", err)
			}
			for _, leak := range []string{"wJalrXUtnFEMI", "SELECT", "reasonable overall", "The lookup"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error %q leaks %q", err, leak)
				}
			}
		})
	}
}

func TestBedrockConfig(t *testing.T) {
	if _, err := New(nil, brModel); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := New(&bedrockruntime.Client{}, " "); err == nil {
		t.Error("empty model accepted")
	}
	b, calls := brServer(t, brReply(200, brConverse(critictest.SampleReview, "end_turn")))
	if c, err := b.Review(context.Background(), critic.Input{}); err != nil || !strings.Contains(c.Summary, "empty") || calls.Load() != 0 {
		t.Fatalf("empty diff: %+v %v (calls %d)", c, err, calls.Load())
	}
}

// A stop at max_tokens is a cut answer, not a malformed one: the complete
// findings are kept, in one attempt, and the critique says so (R-CRITIC-5).
// Rules: R-CRITIC-5.
func TestBedrockCutAtMaxTokens_KeepsCompleteFindings(t *testing.T) {
	cut := `{"summary": "The lookup is unsafe.", "findings": [{"file": "internal/store/store.go", "line": 11, "severity": "error", "rule": "sql-injection", "message": "Pass id as a parameter."}, {"file": "internal/store/store.go", "li`
	b, calls := brServer(t, brReply(200, brConverse(cut, "max_tokens")))
	c, err := b.Review(context.Background(), critictest.SampleInput())
	if err != nil || calls.Load() != 1 {
		t.Fatalf("%v, %d calls", err, calls.Load())
	}
	if len(c.Findings) != 1 || c.Findings[0].Rule != "sql-injection" || !c.Cut || !strings.Contains(c.Summary, "cut at its length limit") {
		t.Fatalf("critique %+v", c)
	}
}

func render(v any) string { b, _ := json.Marshal(v); return string(b) }

// For a model that caches prompt prefixes, the system prompt goes as its
// fixed rules, a cache point, then the per-request rest; the cache tokens
// Bedrock reports are stored with the critique. A model without prompt
// caching gets one block (TestBedrockReview), since it would refuse the
// cache point.
// Rules: R-COST-4.
func TestBedrockPromptCaching_CachePointAfterTheFixedRules(t *testing.T) {
	var bodies []map[string]any
	var mu sync.Mutex
	usage := []string{`"cacheReadInputTokens":0,"cacheWriteInputTokens":1210`, `"cacheReadInputTokens":1210,"cacheWriteInputTokens":0`}
	b, calls := brServerFor(t, "us.anthropic.claude-sonnet-4-20250514-v1:0", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		mu.Lock()
		bodies = append(bodies, body)
		u := usage[len(bodies)-1]
		mu.Unlock()
		text, _ := json.Marshal(critictest.SampleReview)
		brReply(200, []byte(`{"output":{"message":{"content":[{"text":`+string(text)+`}],"role":"assistant"}},"stopReason":"end_turn","usage":{"inputTokens":900,"outputTokens":212,"totalTokens":2322,`+u+`}}`))(w, r)
	})
	var got []critic.Critique
	for range 2 {
		c, err := b.Review(context.Background(), critictest.SampleInput())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls", calls.Load())
	}
	var fixed []string
	for _, body := range bodies {
		sys, _ := body["system"].([]any)
		if len(sys) != 3 {
			t.Fatalf("system %v; want text, cache point, text", sys)
		}
		first, _ := sys[0].(map[string]any)["text"].(string)
		point, _ := sys[1].(map[string]any)["cachePoint"].(map[string]any)
		rest, _ := sys[2].(map[string]any)["text"].(string)
		if point["type"] != "default" || !strings.Contains(first, "Report at most") || strings.Contains(first, "UNTRUSTED") || !strings.Contains(rest, "BEGIN UNTRUSTED DATA") {
			t.Fatalf("system blocks: %q | %v | %q", first[len(first)-60:], point, rest[:60])
		}
		fixed = append(fixed, first)
	}
	if fixed[0] != fixed[1] {
		t.Error("the cached part differs between two requests: it would never be read from the cache")
	}
	if u := got[0].Usage; u == nil || u.CacheWriteTokens != 1210 || u.CacheReadTokens != 0 || u.InputTokens != 900 {
		t.Errorf("first usage %+v; want 1210 written to the cache", u)
	}
	if u := got[1].Usage; u == nil || u.CacheReadTokens != 1210 || u.CacheWriteTokens != 0 {
		t.Errorf("second usage %+v; want 1210 read from the cache", u)
	}
}

// Which model ids get a cache point: the families Bedrock caches for,
// whether named by id, cross-region profile or ARN; not others, and not an
// application inference profile, whose ARN does not name its model.
func TestCachesPrompts(t *testing.T) {
	for id, want := range map[string]bool{
		"anthropic.claude-3-7-sonnet-20250219-v1:0":                                                         true,
		"us.anthropic.claude-sonnet-4-20250514-v1:0":                                                        true,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                                  true,
		"eu.anthropic.claude-opus-4-1-20250805-v1:0":                                                        true,
		"apac.anthropic.claude-haiku-4-5-20251001-v1:0":                                                     true,
		"anthropic.claude-3-5-haiku-20241022-v1:0":                                                          true,
		"amazon.nova-pro-v1:0":                                                                              true,
		"us.amazon.nova-lite-v1:0":                                                                          true,
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0":                                true,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-20250514-v1:0": true,
		"anthropic.claude-3-5-sonnet-20240620-v1:0":                                                         false,
		"anthropic.claude-3-5-sonnet-20241022-v2:0":                                                         false,
		"anthropic.claude-3-haiku-20240307-v1:0":                                                            false,
		"meta.llama3-70b-instruct-v1:0":                                                                     false,
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6":                 false,
	} {
		if got := CachesPrompts(id); got != want {
			t.Errorf("CachesPrompts(%q) = %v; want %v", id, got, want)
		}
	}
}
