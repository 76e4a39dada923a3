// Package openai is the OpenAI-compatible chat completions adapter of
// critic.Model (OpenAI, Azure OpenAI's v1 endpoint, vLLM, Ollama,
// LiteLLM...).
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/retry"
)

// Config configures New.
type Config struct {
	// BaseURL is the server root; requests go to BaseURL + "/v1/chat/completions".
	// Empty means "https://api.openai.com". Any OpenAI-compatible server
	// (Azure OpenAI's v1 endpoint, vLLM, Ollama, LiteLLM...) works.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none.
	APIKey string
	// Model is required, e.g. "gpt-4.1".
	Model string
	// HTTPClient defaults to http.DefaultClient's transport with no
	// timeout of its own: each call is bounded by Timeout and the
	// caller's deadline instead (R-STAGE-9).
	HTTPClient *http.Client
	// Timeout bounds one call: the model's worst case
	// (CRITICIZER_MODEL_TIMEOUT); zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is the longest one call may take when Config.Timeout is
// zero (config.DefaultModelTimeout).
const DefaultTimeout = 5 * time.Minute

// AfterReply is kept back from the caller's deadline (a quarter of what is
// left, in a short invocation) to store the review and enqueue the next
// stage once the model has answered: a reply that leaves no time to keep
// it would be paid for and thrown away.
const AfterReply = 10 * time.Second

// Model is a critic.Model backed by an OpenAI-compatible chat completions
// API, asked for a JSON object (response_format json_object).
//
// Failures are classified for the stage runner: HTTP errors through
// retry.HTTPStatusError (429 and 5xx retryable, honouring Retry-After or
// OpenAI's x-ratelimit-reset-* headers; 400, 401, 403, 404 not), an
// exhausted quota (insufficient_quota) and refusals as POLICY_REJECTED.
// finish_reason "length" is a cut reply, not an error. Nothing is logged;
// errors never quote the prompt or the reply.
//
// The output limit goes as max_completion_tokens to the OpenAI models that
// require it (the o-series and gpt-5, which refuse max_tokens with a 400)
// and as max_tokens to every other model, which is what most
// OpenAI-compatible servers understand.
//
// A call's timeout derives from the invocation's remaining time: it ends
// after Timeout, or AfterReply before the caller's deadline, whichever is
// sooner; a call cut this way is a retryable NETWORK_TIMEOUT. No constant
// client timeout cuts a slow model that the invocation could still wait
// for.
//
// A Model is immutable after New and safe for concurrent use.
type Model struct {
	endpoint string
	apiKey   string
	model    string
	client   *http.Client
	timeout  time.Duration
}

var _ critic.Model = (*Model)(nil)

// New returns a Model.
func New(c Config) (*Model, error) {
	if strings.TrimSpace(c.Model) == "" {
		return nil, errors.New("critic/openai: a model is required")
	}
	base := strings.TrimRight(c.BaseURL, "/")
	if base == "" {
		base = "https://api.openai.com"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("critic/openai: base URL must be an absolute http(s) URL")
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Model{endpoint: base + "/v1/chat/completions", apiKey: c.APIKey, model: strings.TrimSpace(c.Model), client: client,
		timeout: timeout}, nil
}

// Name is "openai/<model>".
func (o *Model) Name() string { return "openai/" + o.model }

// completionTokensModels need max_completion_tokens.
var completionTokensModels = regexp.MustCompile(`^(o[0-9]|gpt-5)`)

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
	MaxTokens           int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Temperature         *float32 `json:"temperature,omitempty"`
}

type openAIResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			// CachedTokens are the prompt tokens OpenAI's automatic
			// prompt caching served (part of PromptTokens).
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

type openAIErrorBody struct {
	Error struct {
		Type string `json:"type"`
		Code any    `json:"code"` // a string, a number or null depending on the server
	} `json:"error"`
}

const openAIOp = "openai.ChatCompletions"

// Complete implements critic.Model.
func (o *Model) Complete(ctx context.Context, p critic.Request) (critic.Reply, error) {
	reqBody := openAIRequest{
		Model: o.model,
		Messages: []openAIMessage{
			{Role: "system", Content: p.System},
			{Role: "user", Content: p.User},
		},
		Temperature: p.Temperature,
	}
	if completionTokensModels.MatchString(strings.ToLower(o.model)) {
		reqBody.MaxCompletionTokens = p.MaxOutputTokens
	} else {
		reqBody.MaxTokens = p.MaxOutputTokens
	}
	reqBody.ResponseFormat.Type = "json_object"
	body, err := json.Marshal(reqBody)
	if err != nil {
		return critic.Reply{}, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: encoding the request: %w", openAIOp, err))
	}
	ctx, cancel := deadline.Call(ctx, o.timeout, AfterReply)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return critic.Reply{}, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: building the request: %w", openAIOp, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return critic.Reply{}, retry.WithOp(redactURLError(err), openAIOp)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return critic.Reply{}, retry.WithOp(err, openAIOp)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return critic.Reply{}, openAIStatusError(resp, raw)
	}
	var answer openAIResponse
	if err := json.Unmarshal(raw, &answer); err != nil || len(answer.Choices) == 0 {
		return critic.Reply{}, retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: not a chat completion (%d bytes)", openAIOp, critic.ErrMalformedReply, len(raw)))
	}
	c := answer.Choices[0]
	switch {
	case c.Message.Refusal != nil && *c.Message.Refusal != "":
		return critic.Reply{}, retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the model refused to review the change", openAIOp))
	case c.FinishReason == "content_filter":
		return critic.Reply{}, retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the reply was withheld by the content filter", openAIOp))
	case c.Message.Content == nil:
		return critic.Reply{}, retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: no content (finish_reason %q)", openAIOp, critic.ErrMalformedReply, safeWord(c.FinishReason)))
	}
	r := critic.Reply{Text: *c.Message.Content, Cut: c.FinishReason == "length"}
	if u := answer.Usage; u != nil {
		r.InputTokens, r.OutputTokens = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			r.CacheReadTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	return r, nil
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

// maxReplyBytes bounds what is read of an answer.
const maxReplyBytes = 1 << 20
