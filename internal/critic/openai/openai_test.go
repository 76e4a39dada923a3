package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/retry"
)

const oaTestKey = "sk-proj-criticizerTESTkey0123456789"

// oaCompletion wraps content in a chat completion as OpenAI returns it.
func oaCompletion(content string) []byte {
	c, _ := json.Marshal(content)
	return []byte(`{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": ` + string(c) + `,
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 236,
    "total_tokens": 1353,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_b705f0c291"
}`)
}

const oaReview = critictest.SampleReview

// oaServer is a stand-in OpenAI endpoint answering with h; it counts calls.
func oaServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func oaReply(status int, body []byte, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func oaCritic(t *testing.T, srv *httptest.Server, opts ...critic.LLMOption) *critic.LLM {
	t.Helper()
	return oaCriticModel(t, srv, "gpt-4.1", opts...)
}

func oaCriticModel(t *testing.T, srv *httptest.Server, model string, opts ...critic.LLMOption) *critic.LLM {
	t.Helper()
	m, err := New(Config{BaseURL: srv.URL + "/", APIKey: oaTestKey, Model: model, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	o, err := critic.NewLLM(m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAIReview(t *testing.T) {
	var got struct {
		method, path, auth, contentType string
		body                            map[string]any
	}
	srv, _ := oaServer(t, func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path = r.Method, r.URL.Path
		got.auth, got.contentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got.body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		oaReply(200, oaCompletion(oaReview))(w, r)
	})
	c, err := oaCritic(t, srv).Review(context.Background(), critictest.SampleInput())
	if err != nil {
		t.Fatal(err)
	}
	if got.method != "POST" || got.path != "/v1/chat/completions" || got.auth != "Bearer "+oaTestKey || got.contentType != "application/json" {
		t.Fatalf("request %s %s, auth %q, content type %q", got.method, got.path, got.auth, got.contentType)
	}
	body := got.body
	if body["model"] != "gpt-4.1" || body["max_tokens"] != float64(400+200*critic.DefaultLLMMaxFindings) || body["max_completion_tokens"] != nil {
		t.Errorf("model/max_tokens: %v %v", body["model"], body["max_tokens"])
	}
	if _, ok := body["temperature"]; ok {
		t.Error("temperature sent although not configured")
	}
	if rf, _ := body["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", body["response_format"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
	sys, user := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if sys["role"] != "system" || !strings.Contains(sys["content"].(string), "Report at most") || user["role"] != "user" ||
		!strings.Contains(user["content"].(string), "BEGIN UNTRUSTED DATA") {
		t.Errorf("messages are not the prompt: %v", msgs)
	}

	want := critic.Critique{
		Critic:  "openai/gpt-4.1",
		Summary: "The lookup is open to SQL injection and hides scan errors.",
		Findings: []critic.Finding{
			{File: "internal/store/store.go", Line: 11, Severity: critic.SeverityError, Rule: "sql-injection", Message: "An id of ' OR '1'='1 returns every row; pass id as a query parameter."},
			{File: "internal/store/store.go", Line: 13, Severity: critic.SeverityWarning, Rule: "ignored-error", Message: "The error returned by Scan is discarded, so a failed read returns an empty item; return it."},
		},
		Files: 3, Additions: 13, Deletions: 4, Usage: &critic.Usage{InputTokens: 1117, OutputTokens: 236},
	}
	if !critiquesEqual(c, want) {
		t.Fatalf("critique:\n%+v\nwant:\n%+v", c, want)
	}
}

func critiquesEqual(a, b critic.Critique) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		class     retry.Class
		retryable bool
		after     time.Duration
		malformed bool
	}{
		{"429 with Retry-After", oaReply(429, []byte(`{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			"Retry-After", "20", "X-Ratelimit-Remaining-Tokens", "0"), retry.RateLimited, true, 20 * time.Second, false},
		{"429 with reset headers", oaReply(429, []byte(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			"X-Ratelimit-Reset-Requests", "1s", "X-Ratelimit-Reset-Tokens", "6m0s"), retry.RateLimited, true, 6 * time.Minute, false},
		{"quota exhausted", oaReply(429, []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)),
			retry.PolicyRejected, false, 0, false},
		{"500", oaReply(500, []byte(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)),
			retry.Upstream5xx, true, 0, false},
		{"503 overloaded", oaReply(503, []byte(`{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`)),
			retry.Upstream5xx, true, 0, false},
		{"401", oaReply(401, []byte(`{"error":{"message":"Incorrect API key provided: sk-proj-****6789.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)),
			retry.AuthDenied, false, 0, false},
		{"400", oaReply(400, []byte(`{"error":{"message":"Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}`)),
			retry.SchemaInvalid, false, 0, false},
		{"model not found", oaReply(404, []byte(`{"error":{"message":"The model 'gpt-4.1' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)),
			retry.NotFound, false, 0, false},
		{"prose instead of JSON", oaReply(200, oaCompletion("The change looks fine. internal/store/store.go has no issues.")), retry.SchemaInvalid, true, 0, true},
		{"not a completion", oaReply(200, []byte(`<html>gateway</html>`)), retry.SchemaInvalid, true, 0, true},
		{"refusal", oaReply(200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't help with that."},"finish_reason":"stop"}]}`)),
			retry.PolicyRejected, false, 0, false},
		{"content filter", oaReply(200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}]}`)),
			retry.PolicyRejected, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := oaServer(t, tt.handler)
			_, err := oaCritic(t, srv).Review(context.Background(), critictest.SampleInput())
			if err == nil {
				t.Fatal("no error")
			}
			c := retry.Classify(err)
			if c.Class != tt.class || c.Retryable() != tt.retryable || c.RetryAfter != tt.after {
				t.Fatalf("classified %s (retryable %v, after %v), want %s (%v, %v): %v", c.Class, c.Retryable(), c.RetryAfter, tt.class, tt.retryable, tt.after, err)
			}
			if errors.Is(err, critic.ErrMalformedReply) != tt.malformed {
				t.Fatalf("errors.Is(ErrMalformedReply) = %v: %v", !tt.malformed, err)
			}
			for _, leak := range []string{oaTestKey, "sk-proj", "SELECT", "store.go", "Rate limit reached", "looks fine"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error %q leaks %q", err, leak)
				}
			}
		})
	}
}

func TestOpenAISkipsTheModel(t *testing.T) {
	srv, calls := oaServer(t, oaReply(200, oaCompletion(oaReview)))
	o := oaCritic(t, srv)
	c, err := o.Review(context.Background(), critic.Input{Diff: ""})
	if err != nil || c.Critic != "openai/gpt-4.1" || c.Findings == nil || len(c.Findings) != 0 || !strings.Contains(c.Summary, "empty") {
		t.Fatalf("empty diff: %+v, %v", c, err)
	}
	_, err = o.Review(context.Background(), critic.Input{Diff: "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n"})
	if !errors.Is(err, critic.ErrInvalidDiff) {
		t.Fatalf("invalid diff: %v", err)
	}
	if c := retry.Classify(err); c.Class != retry.SchemaInvalid || c.Retryable() {
		t.Fatalf("invalid diff classified %s", c.Class)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Review(ctx, critictest.SampleInput()); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the model was called %d times", calls.Load())
	}
}

func TestOpenAINetworkError(t *testing.T) {
	srv, _ := oaServer(t, oaReply(200, nil))
	o := oaCritic(t, srv)
	srv.Close()
	_, err := o.Review(context.Background(), critictest.SampleInput())
	if c := retry.Classify(err); !c.Retryable() || (c.Class != retry.NetworkError && c.Class != retry.NetworkTimeout) {
		t.Fatalf("classified %s: %v", c.Class, err)
	}
}

func TestOpenAIConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("no model accepted")
	}
	if _, err := New(Config{Model: "m", BaseURL: "ftp://x"}); err == nil {
		t.Error("ftp base URL accepted")
	}
	o, err := New(Config{Model: "gpt-4.1"})
	if err != nil || o.endpoint != "https://api.openai.com/v1/chat/completions" {
		t.Fatalf("%v %v", o, err)
	}
}

// The OpenAI models that refuse max_tokens (o-series, gpt-5) get
// max_completion_tokens; every other model max_tokens.
func TestOpenAIOutputLimitParameterPerModelFamily(t *testing.T) {
	for model, param := range map[string]string{"gpt-4.1": "max_tokens", "gpt-5-mini": "max_completion_tokens",
		"o3": "max_completion_tokens", "o4-mini": "max_completion_tokens", "llama3.1:70b": "max_tokens"} {
		var body map[string]any
		srv, _ := oaServer(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			oaReply(200, oaCompletion(oaReview))(w, r)
		})
		if _, err := oaCriticModel(t, srv, model, critic.WithLLMMaxFindings(3)).Review(context.Background(), critictest.SampleInput()); err != nil {
			t.Fatal(err)
		}
		other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[param]
		if body[param] != float64(400+200*3) || body[other] != nil {
			t.Errorf("%s: %s=%v %s=%v, want %s only", model, param, body[param], other, body[other], param)
		}
	}
}

// finish_reason "length" is a cut answer: its complete findings are kept,
// in one attempt, and noted (R-CRITIC-5).
// Rules: R-CRITIC-5.
func TestOpenAICutAtLength_KeepsCompleteFindingsOneAttempt(t *testing.T) {
	cut := `{"summary": "Unsafe lookup.", "findings": [{"file": "internal/store/store.go", "line": 11, "severity": "error", "rule": "sql-injection", "message": "Pass id as a parameter."}, {"file": "internal/st`
	srv, calls := oaServer(t, oaReply(200, critictest.Completion(cut, "length", 900, 1000)))
	c, err := oaCritic(t, srv).Review(context.Background(), critictest.SampleInput())
	if err != nil || calls.Load() != 1 {
		t.Fatalf("%v, %d calls", err, calls.Load())
	}
	if len(c.Findings) != 1 || !c.Cut || !strings.Contains(c.Summary, "cut at its length limit") || c.Usage.OutputTokens != 1000 {
		t.Fatalf("critique %+v", c)
	}
}

// Critics are shared by concurrent invocations; run under -race.
func TestOpenAIConcurrentReviews(t *testing.T) {
	srv, calls := oaServer(t, oaReply(200, oaCompletion(oaReview)))
	o := oaCritic(t, srv)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := o.Review(context.Background(), critictest.SampleInput())
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 8 {
		t.Fatalf("%d calls", calls.Load())
	}
}

// The prompt tokens OpenAI's automatic caching served are recorded as
// cache reads.
// Rules: R-COST-4.
func TestOpenAICachedTokensRecorded(t *testing.T) {
	body := strings.Replace(string(oaCompletion(oaReview)), `"cached_tokens": 0`, `"cached_tokens": 1024`, 1)
	srv, _ := oaServer(t, oaReply(200, []byte(body)))
	c, err := oaCritic(t, srv).Review(context.Background(), critictest.SampleInput())
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.CacheReadTokens != 1024 || c.Usage.InputTokens != 1117 {
		t.Errorf("usage %+v; want 1024 of the 1117 prompt tokens read from the cache", c.Usage)
	}
}
