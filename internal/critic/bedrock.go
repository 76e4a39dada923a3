package critic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/retry"
)

// BedrockConverser is the part of *bedrockruntime.Client that Bedrock uses.
type BedrockConverser interface {
	Converse(ctx context.Context, params *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

var _ BedrockConverser = (*bedrockruntime.Client)(nil)

// Bedrock is a Critic backed by the Amazon Bedrock Converse API: the system
// prompt and the diff go to the configured model (a model id, inference
// profile id or ARN), which answers with JSON findings.
//
// Failures are classified for the stage runner: throttling, ModelNotReady
// and ServiceQuotaExceeded are RATE_LIMITED, ModelTimeout is
// NETWORK_TIMEOUT, ServiceUnavailable, InternalServer and ModelError are
// UPSTREAM_5XX (all retryable); ValidationException is SCHEMA_INVALID,
// AccessDenied AUTH_DENIED, ResourceNotFound NOT_FOUND (not retryable); a
// guardrail or content filter stopping the answer is POLICY_REJECTED; an
// answer that is not the JSON asked for is a retryable UPSTREAM_5XX
// wrapping ErrMalformedReply. Nothing is logged.
//
// The client's own retries (the SDK retries throttling three times by
// default) add to the stage's; configure the client with RetryMaxAttempts 1
// to leave retrying to the stage runner.
//
// A Bedrock is immutable after NewBedrock and safe for concurrent use.
type Bedrock struct {
	client BedrockConverser
	model  string
	cfg    llmConfig
}

var _ Critic = (*Bedrock)(nil)

// NewBedrock returns a Bedrock critic that uses client and modelID.
func NewBedrock(client BedrockConverser, modelID string, opts ...LLMOption) (*Bedrock, error) {
	if client == nil {
		return nil, errors.New("critic: bedrock: a client is required")
	}
	if strings.TrimSpace(modelID) == "" {
		return nil, errors.New("critic: bedrock: a model id is required")
	}
	return &Bedrock{client: client, model: strings.TrimSpace(modelID), cfg: newLLMConfig(opts)}, nil
}

// Name is the critic's identity in Critique.Critic: "bedrock/<model>".
func (b *Bedrock) Name() string { return "bedrock/" + b.model }

// Review implements Critic.
func (b *Bedrock) Review(ctx context.Context, in Input) (Critique, error) {
	return reviewWithLLM(ctx, b.Name(), b.cfg, in, b.complete)
}

const bedrockOp = "bedrock.Converse"

func (b *Bedrock) complete(ctx context.Context, p llmPrompt) (string, error) {
	temperature := float32(0)
	if b.cfg.temperature != nil {
		temperature = *b.cfg.temperature
	}
	out, err := b.client.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId: aws.String(b.model),
		System:  []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: p.system}},
		Messages: []types.Message{{
			Role:    types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: p.user}},
		}},
		InferenceConfig: &types.InferenceConfiguration{
			MaxTokens:   aws.Int32(int32(min(b.cfg.maxOutputTokens, 1<<30))),
			Temperature: aws.Float32(temperature),
		},
	})
	if err != nil {
		return "", classifyBedrock(err)
	}
	switch out.StopReason {
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return "", retry.Permanent(retry.PolicyRejected, fmt.Errorf("%s: the answer was stopped (%s)", bedrockOp, out.StopReason))
	case types.StopReasonModelContextWindowExceeded:
		return "", retry.Permanent(retry.SchemaInvalid, fmt.Errorf("%s: the prompt exceeds the model's context window; lower the diff budget", bedrockOp))
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return "", retry.Transient(retry.SchemaInvalid, fmt.Errorf("%s: %w: no message in the output", bedrockOp, ErrMalformedReply))
	}
	var text strings.Builder
	for _, block := range msg.Value.Content {
		if t, ok := block.(*types.ContentBlockMemberText); ok {
			text.WriteString(t.Value)
		}
	}
	return text.String(), nil
}

// bedrockClasses maps Bedrock runtime error codes to failure classes where
// the shared table (package retry) has no entry or a different view.
var bedrockClasses = map[string]retry.Class{
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

// classifyBedrock classifies an SDK error, keeping what retry.Classify
// learnt from the response (HTTP status, Retry-After, operation).
func classifyBedrock(err error) error {
	c := *retry.Classify(err)
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		if class, ok := bedrockClasses[api.ErrorCode()]; ok {
			c.Class = class
		}
	}
	if c.Op == "" {
		c.Op = bedrockOp
	}
	return &c
}
