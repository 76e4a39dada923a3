// Package bedrock is the Amazon Bedrock Converse adapter of critic.Model.
// It is apart from package critic so that only the llm function links the
// Bedrock SDK (R-WIRE-1).
package bedrock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/retry"
)

// Converser is the part of *bedrockruntime.Client that Model uses.
type Converser interface {
	Converse(ctx context.Context, params *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

var _ Converser = (*bedrockruntime.Client)(nil)

// Model sends a review to a Bedrock model (a model id, inference profile id
// or ARN) through the Converse API.
//
// Failures are classified for the stage runner: throttling, ModelNotReady
// and ServiceQuotaExceeded are RATE_LIMITED, ModelTimeout is
// NETWORK_TIMEOUT, ServiceUnavailable, InternalServer and ModelError are
// UPSTREAM_5XX (all retryable); ValidationException is SCHEMA_INVALID,
// AccessDenied AUTH_DENIED, ResourceNotFound NOT_FOUND (not retryable); a
// guardrail or content filter stopping the answer is POLICY_REJECTED. A
// stop at max_tokens is a cut reply, not an error. Nothing is logged.
//
// The client's own retries add to the stage's; the wiring configures it
// with one attempt (ClientOptions), leaving retries to the runner.
//
// A call's timeout derives from the invocation's remaining time
// (R-STAGE-9): it ends after the model's own limit (WithTimeout), or
// AfterReply before the caller's deadline, whichever is sooner. A call cut
// this way is a retryable NETWORK_TIMEOUT.
type Model struct {
	client  Converser
	model   string
	timeout time.Duration
}

var _ critic.Model = (*Model)(nil)

// DefaultTimeout is the longest one call may take when WithTimeout is not
// given (config.DefaultModelTimeout).
const DefaultTimeout = 5 * time.Minute

// AfterReply is kept back from the caller's deadline (a quarter of what is
// left, in a short invocation) to store the review and enqueue the next
// stage once the model has answered: a reply that leaves no time to keep
// it would be paid for and thrown away.
const AfterReply = 10 * time.Second

// Option configures New.
type Option func(*Model)

// WithTimeout bounds one call (the model's worst case,
// CRITICIZER_MODEL_TIMEOUT). Values <= 0 keep DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(m *Model) {
		if d > 0 {
			m.timeout = d
		}
	}
}

// New returns a Model that uses client and modelID.
func New(client Converser, modelID string, opts ...Option) (*Model, error) {
	if client == nil {
		return nil, errors.New("critic/bedrock: a client is required")
	}
	if strings.TrimSpace(modelID) == "" {
		return nil, errors.New("critic/bedrock: a model id is required")
	}
	m := &Model{client: client, model: strings.TrimSpace(modelID), timeout: DefaultTimeout}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// ClientOptions configures the Bedrock Runtime client a Model uses: one
// attempt (the stage runner owns retries; SDK retries would multiply
// them), and no HTTP client timeout of its own. Every AWS client of a
// function shares awsclient's 30 s bound on an HTTP exchange, and a
// Converse call's exchange lasts as long as the model writes: a slow
// model on a long prompt takes minutes, and a constant would cut every
// such call, each retry again. Complete bounds each call by the
// invocation instead.
func ClientOptions(o *bedrockruntime.Options) {
	o.RetryMaxAttempts = 1
	if bc, ok := o.HTTPClient.(*awshttp.BuildableClient); ok {
		o.HTTPClient = bc.WithTimeout(0)
	}
}

// Name is "bedrock/<model>".
func (m *Model) Name() string { return "bedrock/" + m.model }

const op = "bedrock.Converse"

// Complete implements critic.Model.
func (m *Model) Complete(ctx context.Context, req critic.Request) (critic.Reply, error) {
	ctx, cancel := deadline.Call(ctx, m.timeout, AfterReply)
	defer cancel()
	temperature := float32(0) // the most repeatable reviews
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	out, err := m.client.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId: aws.String(m.model),
		System:  m.system(req),
		Messages: []types.Message{{
			Role:    types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: req.User}},
		}},
		InferenceConfig: &types.InferenceConfiguration{
			MaxTokens:   aws.Int32(int32(min(max(req.MaxOutputTokens, 1), 1<<30))),
			Temperature: aws.Float32(temperature),
		},
	})
	if err != nil {
		return critic.Reply{}, classify(err)
	}
	switch out.StopReason {
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return critic.Reply{}, retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the answer was stopped (%s)", op, out.StopReason))
	case types.StopReasonModelContextWindowExceeded:
		return critic.Reply{}, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("%s: the prompt exceeds the model's context window; lower the diff budget", op))
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return critic.Reply{}, retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: no message in the output", op, critic.ErrMalformedReply))
	}
	var text strings.Builder
	for _, block := range msg.Value.Content {
		if t, ok := block.(*types.ContentBlockMemberText); ok {
			text.WriteString(t.Value)
		}
	}
	r := critic.Reply{Text: text.String(), Cut: out.StopReason == types.StopReasonMaxTokens}
	if u := out.Usage; u != nil {
		r.InputTokens, r.OutputTokens = int(aws.ToInt32(u.InputTokens)), int(aws.ToInt32(u.OutputTokens))
		r.CacheReadTokens, r.CacheWriteTokens = int(aws.ToInt32(u.CacheReadInputTokens)), int(aws.ToInt32(u.CacheWriteInputTokens))
	}
	return r, nil
}

// system is the request's system prompt: for a model that caches prompt
// prefixes, its stable part, a cache point, then the rest (R-COST-4).
//
// Bedrock caches a prefix only from a model's minimum up (1,024 tokens
// for Claude Sonnet 3.7, 4 and 4.5 and Opus 4 and 4.1, 2,048 for Claude
// 3.5 Haiku, 4,096 for Claude Opus 4.5 and Haiku 4.5, about 1,000 for
// Nova); under it the request succeeds and nothing is cached. A model
// that does not support caching would refuse the cache point, so it gets
// none.
func (m *Model) system(req critic.Request) []types.SystemContentBlock {
	n := req.StableSystem
	if n <= 0 || n > len(req.System) || !CachesPrompts(m.model) {
		return []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	blocks := []types.SystemContentBlock{
		&types.SystemContentBlockMemberText{Value: req.System[:n]},
		&types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}},
	}
	if n < len(req.System) {
		blocks = append(blocks, &types.SystemContentBlockMemberText{Value: req.System[n:]})
	}
	return blocks
}

// cachingFamilies are the models Bedrock's prompt caching supports
// generally (Claude 3.5 Sonnet v2 only for those admitted to its preview,
// so not here), as the model id spells them.
var cachingFamilies = []string{
	"anthropic.claude-3-7-sonnet",
	"anthropic.claude-3-5-haiku",
	"anthropic.claude-sonnet-4", // Sonnet 4 and 4.5
	"anthropic.claude-opus-4",   // Opus 4, 4.1 and 4.5
	"anthropic.claude-haiku-4",  // Haiku 4.5
	"amazon.nova-micro",
	"amazon.nova-lite",
	"amazon.nova-pro",
	"amazon.nova-premier",
}

// CachesPrompts reports whether the model a model id, inference profile id
// or ARN names supports prompt caching. An application inference
// profile's ARN does not name its model: no.
func CachesPrompts(modelID string) bool {
	id := modelID[strings.LastIndexByte(modelID, '/')+1:]
	for _, f := range cachingFamilies {
		// A cross-region profile prefixes the model id: us., eu., apac.,
		// global. …
		if strings.HasPrefix(id, f) || strings.Contains(id, "."+f) {
			return true
		}
	}
	return false
}

// classes maps Bedrock runtime error codes to failure classes where the
// shared table (package retry) has no entry or a different view.
var classes = map[string]retry.Class{
	"ThrottlingException":           retry.RateLimited,
	"ModelNotReadyException":        retry.RateLimited, // the model is being loaded: come back shortly
	"ServiceQuotaExceededException": retry.RateLimited, // a token or request quota window
	"ModelTimeoutException":         retry.NetworkTimeout,
	"ServiceUnavailableException":   retry.Upstream5xx,
	"InternalServerException":       retry.Upstream5xx,
	"ModelErrorException":           retry.Upstream5xx, // the model failed to process the request
	"ModelStreamErrorException":     retry.Upstream5xx,
	"ValidationException":           retry.SchemaInvalid,
	"AccessDeniedException":         retry.AuthDenied,
	"ResourceNotFoundException":     retry.NotFound,
}

// classify classifies an SDK error, keeping what retry.Classify learnt from
// the response (HTTP status, Retry-After, operation).
func classify(err error) error {
	c := *retry.Classify(err)
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		if class, ok := classes[api.ErrorCode()]; ok {
			c.Class = class
		}
	}
	if c.Op == "" {
		c.Op = op
	}
	return &c
}
