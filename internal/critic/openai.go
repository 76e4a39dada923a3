package critic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// OpenAIConfig configures NewOpenAI.
type OpenAIConfig struct {
	// BaseURL is the server root; requests go to BaseURL + "/v1/chat/completions".
	// Empty means "https://api.openai.com". Any OpenAI-compatible server
	// (Azure OpenAI's v1 endpoint, vLLM, Ollama, LiteLLM...) works.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none.
	APIKey string
	// Model is required, e.g. "gpt-4.1".
	Model string
	// HTTPClient defaults to one with a 2-minute timeout.
	HTTPClient *http.Client
}

// OpenAI is a Critic backed by an OpenAI-compatible chat completions API,
// asked for a JSON object (response_format json_object).
//
// Failures are classified for the stage runner: HTTP errors through
// retry.HTTPStatusError (429 and 5xx retryable, honouring Retry-After or
// OpenAI's x-ratelimit-reset-* headers; 400, 401, 403, 404 not), an
// exhausted quota (insufficient_quota) and refusals as POLICY_REJECTED, a
// reply that is not the JSON asked for as a retryable UPSTREAM_5XX wrapping
// ErrMalformedReply. Nothing is logged; errors never quote the prompt or the
// reply.
//
// An OpenAI is immutable after NewOpenAI and safe for concurrent use.
type OpenAI struct {
	endpoint string
	apiKey   string
	model    string
	client   *http.Client
	cfg      llmConfig
}

var _ Critic = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI critic.
func NewOpenAI(c OpenAIConfig, opts ...LLMOption) (*OpenAI, error) {
	if strings.TrimSpace(c.Model) == "" {
		return nil, errors.New("critic: openai: a model is required")
	}
	base := strings.TrimRight(c.BaseURL, "/")
	if base == "" {
		base = "https://api.openai.com"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("critic: openai: base URL must be an absolute http(s) URL")
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	return &OpenAI{
		endpoint: base + "/v1/chat/completions",
		apiKey:   c.APIKey,
		model:    strings.TrimSpace(c.Model),
		client:   client,
		cfg:      newLLMConfig(opts),
	}, nil
}

// Name is the critic's identity in Critique.Critic: "openai/<model>".
func (o *OpenAI) Name() string { return "openai/" + o.model }

// Review implements Critic.
func (o *OpenAI) Review(ctx context.Context, in Input) (Critique, error) {
	return reviewWithLLM(ctx, o.Name(), o.cfg, in, o.complete)
}

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model          string          `json:"model"`
	Messages       []openAIMessage `json:"messages"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float32 `json:"temperature,omitempty"`
}

type openAIResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type openAIErrorBody struct {
	Error struct {
		Type string `json:"type"`
		Code any    `json:"code"` // a string, a number or null depending on the server
	} `json:"error"`
}

const openAIOp = "openai.ChatCompletions"

func (o *OpenAI) complete(ctx context.Context, p llmPrompt) (string, error) {
	reqBody := openAIRequest{
		Model: o.model,
		Messages: []openAIMessage{
			{Role: "system", Content: p.system},
			{Role: "user", Content: p.user},
		},
		MaxTokens:   o.cfg.maxOutputTokens,
		Temperature: o.cfg.temperature,
	}
	reqBody.ResponseFormat.Type = "json_object"
	body, err := json.Marshal(reqBody)
	if err != nil {
		return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: encoding the request: %w", openAIOp, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: building the request: %w", openAIOp, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return "", retry.WithOp(redactURLError(err), openAIOp)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return "", retry.WithOp(err, openAIOp)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", openAIStatusError(resp, raw)
	}
	var r openAIResponse
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Choices) == 0 {
		return "", retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: not a chat completion (%d bytes)", openAIOp, ErrMalformedReply, len(raw)))
	}
	c := r.Choices[0]
	switch {
	case c.Message.Refusal != nil && *c.Message.Refusal != "":
		return "", retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the model refused to review the change", openAIOp))
	case c.FinishReason == "content_filter":
		return "", retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the reply was withheld by the content filter", openAIOp))
	case c.Message.Content == nil:
		return "", retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: no content (finish_reason %q)", openAIOp, ErrMalformedReply, safeWord(c.FinishReason)))
	}
	return *c.Message.Content, nil
}

// openAIStatusError classifies a non-2xx answer. The body is read only for
// OpenAI's machine-readable error type, never quoted.
func openAIStatusError(resp *http.Response, raw []byte) error {
	hse := &retry.HTTPStatusError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Op: openAIOp}
	var eb openAIErrorBody
	_ = json.Unmarshal(raw, &eb)
	code, _ := eb.Error.Code.(string)
	if eb.Error.Type == "insufficient_quota" || code == "insufficient_quota" {
		// A 429 that waiting does not cure: the account is out of credit.
		return retry.Permanent(retry.PolicyRejected, hse)
	}
	if resp.StatusCode == http.StatusTooManyRequests && hse.RetryAfter == "" {
		// OpenAI says when the request and token budgets refill as
		// durations ("1s", "6m0s", "120ms").
		var wait time.Duration
		for _, h := range []string{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"} {
			if d, err := time.ParseDuration(resp.Header.Get(h)); err == nil && d > wait {
				wait = d
			}
		}
		if wait > 0 {
			return retry.WithRetryAfter(hse, wait)
		}
	}
	return retry.Classify(hse)
}

// redactURLError keeps a transport error's class but drops the URL's user
// information and query, which could carry a key on some gateways.
func redactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	c := *ue
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.User, u.RawQuery = nil, ""
		c.URL = u.String()
	}
	return &c
}

// safeWord makes an upstream-chosen token fit for an error message.
func safeWord(s string) string {
	if len(s) > 32 || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		return "?"
	}
	return s
}
