// Package wire holds what every function's constructor shares: reading
// the environment, the logger, the SDK configuration, and the DynamoDB
// stores and SQS queues every function uses. Each function has its own
// constructor in a package of its own below (wire/intake, wire/fetch,
// wire/llm, wire/notify, wire/feedback, wire/sweeper), called by its
// functions/<name>/main.go and by the local stack alike, so each binary
// links only the services that function calls.
package wire

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Options adjust what a constructor builds; the zero value is what a
// deployed function uses. Tests and the local stack set them.
type Options struct {
	// AWS options for the SDK config (fault injection, quiet logging).
	AWS []awsclient.Option
	// Now fixes the clock (default time.Now).
	Now func() time.Time
	// DigestNow, if set, is the clock daily digests are due by (notify's
	// and the sweeper's; default Now): tests bring a reader's digest hour
	// about with it, leaving leases and evidence times on Now.
	DigestNow func() time.Time
	// Wrap wraps a stage's work (fault injection at stage boundaries).
	Wrap func(job.Stage, stage.Func) stage.Func
	// Runner options of a stage's runner (the jitter seed).
	Runner []stage.Option
}

// Clock is the options' clock, time.Now by default.
func (o Options) Clock() func() time.Time {
	if o.Now != nil {
		return o.Now
	}
	return time.Now
}

// FromEnv reads the function's configuration from the environment and
// makes its JSON logger; on an invalid configuration it logs why and exits,
// which Lambda reports as an init error.
func FromEnv(function string) (config.Config, *slog.Logger) {
	cfg, err := config.FromEnv(os.Getenv)
	log := obs.NewLogger(os.Stdout, cfg.LogLevel).With("function", function)
	if err != nil {
		Fail(log, err)
	}
	return cfg, log
}

// Fail logs an init failure and exits.
func Fail(log *slog.Logger, err error) {
	log.Error("init failed", "error", err)
	os.Exit(1)
}

// Base is the SDK config and the DynamoDB and SQS adapters every function
// uses.
type Base struct {
	Config     config.Config
	AWS        aws.Config
	DynamoDB   *dynamodb.Client
	SQS        *sqs.Client
	Jobs       *dynamo.Jobs
	Deliveries *dynamo.Deliveries
	Evidence   *dynamo.Evidence
	Recipients *dynamo.Preferences
	Queue      *queue.Client
	Log        *slog.Logger
	Now        func() time.Time
	// Posts: the deployment has a channel other than email
	// (CRITICIZER_CHANNELS; notify: it has one), so a runner's dead
	// letter is announced to it. False: no post task is sent
	// (R-CHANNEL-15).
	Posts bool
}

// NewBase loads the SDK config and builds the shared adapters.
func NewBase(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) (*Base, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	awsCfg := awsclient.ForFunction(cfg.Endpoints, o.AWS...)
	now := o.Clock()
	db := dynamo.NewClient(awsCfg, cfg.Endpoints.DynamoDB)
	sq := queue.NewSQS(awsCfg, cfg.Endpoints.SQS)
	jobs, rows := dynamo.NewJobs(db, cfg.JobsTable, now), dynamo.NewDeliveries(db, cfg.DeliveriesTable, now)
	jobs.Retention, rows.Retention = cfg.Retention, cfg.Retention
	return &Base{Config: cfg, AWS: awsCfg, DynamoDB: db, SQS: sq, Log: log, Now: now, Posts: cfg.Channels,
		Jobs:       jobs,
		Deliveries: rows,
		Evidence:   dynamo.NewEvidence(db, cfg.JobsTable, now),
		Recipients: dynamo.NewPreferences(db, cfg.JobsTable, now),
		Queue:      queue.New(sq, cfg.Queues),
	}, nil
}

// Runner wraps a stage's work in the shared SQS batch runner, with the
// options' wrapper and runner options.
func (b *Base) Runner(s job.Stage, fn stage.Func, o Options) (*stage.Runner, error) {
	if b.Config.Queues.Queue[s] == "" {
		return nil, fmt.Errorf("%s is not set", config.QueueEnv(s))
	}
	if o.Wrap != nil {
		fn = o.Wrap(s, fn)
	}
	// The runner dead-letters on the last receive its queue allows
	// (R-STAGE-10); the options' own come after, and win.
	opts := []stage.Option{stage.WithMaxReceives(b.Config.MaxReceiveCount)}
	if b.Posts {
		opts = append(opts, stage.WithDeadLettered(b.announceNotReviewed))
	}
	opts = append(opts, o.Runner...)
	return stage.New(s, b.Config.Queues.Queue[s], fn, b.Queue, b.Jobs, b.Log, opts...), nil
}

// Signer returns the unsubscribe token signer, nil without a key. Intake
// verifies tokens with it; notify signs links.
func Signer(cfg config.Config, log *slog.Logger) (*unsubscribe.Signer, error) {
	if cfg.UnsubscribeKey == "" {
		return nil, nil
	}
	s, err := unsubscribe.NewSigner(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious)
	if err != nil {
		return nil, err
	}
	if s.Rotating() {
		// A reminder to remove the previous key once old emails no longer
		// matter; the keys themselves are never logged.
		log.Info("unsubscribe key rotation: links signed with the previous key still verify", "setting", config.EnvUnsubscribeKeyPrevious)
	}
	return s, nil
}

// announceNotReviewed is every stage runner's DeadLettered hook: a job
// whose own stage is dead-lettered is announced Finished (its outcome,
// read when the notify function handles it, not reviewed) to the
// channels other than email (R-CHANNEL-4).
func (b *Base) announceNotReviewed(ctx context.Context, m job.Message) error {
	return b.Queue.Enqueue(ctx, job.Message{JobID: m.JobID, Stage: job.StageNotify, Task: job.TaskPost, Phase: "finished"})
}
