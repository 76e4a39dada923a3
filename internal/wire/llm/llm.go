// Package llm builds the llm stage: the configured critic reviews the
// diff and the critique is stored on the job.
package llm

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/bedrock"
	"github.com/criticizer/criticizer/internal/critic/openai"
	"github.com/criticizer/criticizer/internal/instructions"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the llm stage's SQS handler. c, if not nil, replaces the
// configured critic (tests); either is wrapped by critic.Incremental
// unless CRITICIZER_INCREMENTAL_REVIEW is false.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options, c critic.Critic) (*stage.Runner, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	if cfg, err = secrets.Apply(ctx, b.AWS, cfg); err != nil {
		return nil, err
	}
	blobs := blob.New(blob.NewS3(b.AWS, cfg.Endpoints.S3), cfg.PayloadBucket)
	r := &pipeline.LLM{
		Base: pipeline.Base{Jobs: b.Jobs, Blobs: blobs, Queue: b.Queue, Log: log, Now: b.Now, Posts: cfg.Channels},
		// A burst of versions is mailed once, about the latest (R-QUIET-3).
		Collapse: cfg.LLM.CollapseWindow,
		// Generated files are the deployment's word or the base's, never
		// the change's (R-CRITIC-7).
		GeneratedPaths: cfg.GeneratedPaths,
		// The team's accepted learnings (R-LEARN-2).
		Learnings: dynamo.NewLearnings(b.DynamoDB, cfg.JobsTable, b.Now),
	}
	// A rerun builds on the last reviewed version (R-COST-3, R-MAIL-3),
	// with a full review at least every FullReviewEvery versions
	// (R-LEDGER-3), unless CRITICIZER_INCREMENTAL_REVIEW is false.
	incremental := func(c critic.Critic) critic.Critic {
		if !cfg.LLM.IncrementalReview {
			return c
		}
		return critic.NewIncremental(c, critic.WithFullReviewEvery(cfg.LLM.FullReviewEvery))
	}
	if cfg.LLM.IncrementalReview {
		r.LookBack = pipeline.DefaultLookBack
	}
	switch m, err := model(cfg, b.AWS); {
	case err != nil:
		return nil, err
	case c != nil:
		r.Critic = incremental(c)
	case m == nil:
		r.Critic = incremental(critic.NewOffline())
	default:
		// The model reviews with the deployment's instructions as the
		// payload bucket's object holds them now (internal/instructions).
		r.Critic = &Instructed{
			Source: &instructions.Source{Get: blobs, Fallback: instructions.FromConfig(cfg), Now: b.Now},
			Build:  func(set instructions.Set) critic.Critic { return incremental(llmCritic(cfg, m, set)) },
		}
	}
	if cfg.LLM.Critic == config.CriticBedrock || cfg.LLM.Critic == config.CriticOpenAI {
		// A model costs per run: no run nobody reads, none past the
		// budgets (R-BUDGET-1, R-BUDGET-2).
		r.Guard = &pipeline.ModelGuard{Budgets: dynamo.NewBudgets(b.DynamoDB, cfg.JobsTable, b.Now),
			PerChangelistHour: cfg.Budgets.ModelRunsPerChangelistHour, PerAuthorDay: cfg.Budgets.ModelRunsPerAuthorDay}
	}
	o.Runner = append([]stage.Option{stage.WithMessageTime(MessageTime(cfg))}, o.Runner...)
	return b.Runner(job.StageLLM, r.Handle, o)
}

// Overhead is the llm stage's work around the model call: reading the job
// and the diff before it, storing the review and enqueuing notify after.
const Overhead = 20 * time.Second

// MessageTime is how long one llm message may take (R-STAGE-9): a model
// call's worst case (CRITICIZER_MODEL_TIMEOUT) and the Overhead around
// it. The offline critic calls no model: the runner's default.
func MessageTime(cfg config.Config) time.Duration {
	switch cfg.LLM.Critic {
	case config.CriticBedrock, config.CriticOpenAI:
		return cfg.LLM.ModelTimeout + Overhead
	}
	return stage.DefaultMessageTime
}

// Critic builds the critic CRITICIZER_CRITIC names, with the
// environment's instructions (the evaluation's; a deployment's llm
// function reads them from the payload bucket, New).
func Critic(cfg config.Config, awsCfg aws.Config) (critic.Critic, error) {
	m, err := model(cfg, awsCfg)
	if err != nil || m == nil {
		return critic.NewOffline(), err
	}
	return llmCritic(cfg, m, instructions.FromConfig(cfg)), nil
}

// llmCritic is the model's critic with the instructions set.
func llmCritic(cfg config.Config, m critic.Model, set instructions.Set) critic.Critic {
	c, err := critic.NewLLM(m, critic.WithLLMMaxFindings(cfg.LLM.MaxFindings), critic.WithInstructions(set.Deployment, set.ByRepository))
	if err != nil {
		panic("llm: a model is set: " + err.Error()) // NewLLM refuses only a nil model
	}
	return c
}

// model is the model CRITICIZER_CRITIC names; nil for the offline critic.
func model(cfg config.Config, awsCfg aws.Config) (critic.Model, error) {
	switch cfg.LLM.Critic {
	case "", config.CriticOffline:
		return nil, nil
	case config.CriticBedrock:
		// The stage runner owns retries (backoff, attempt budget, dead
		// letters); SDK retries would multiply them. A call's timeout
		// derives from the invocation, not the SDK's constant.
		client := bedrockruntime.NewFromConfig(awsCfg, bedrock.ClientOptions)
		return bedrock.New(client, cfg.LLM.BedrockModelID, bedrock.WithTimeout(cfg.LLM.ModelTimeout))
	case config.CriticOpenAI:
		return openai.New(openai.Config{BaseURL: cfg.LLM.OpenAI.BaseURL, APIKey: cfg.LLM.OpenAI.APIKey, Model: cfg.LLM.OpenAI.Model,
			Timeout: cfg.LLM.ModelTimeout})
	}
	return nil, fmt.Errorf("%s: unknown critic %q", config.EnvCritic, cfg.LLM.Critic)
}
