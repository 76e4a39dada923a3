// Package app wires adapters into handlers from a Config. Every function's
// main and the local stack build the same App, so what runs locally is what
// runs in Lambda.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/feedback"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/sweeper"
	"github.com/criticizer/criticizer/internal/webhook"
)

// App holds the adapters and the handlers built over them.
type App struct {
	Config     config.Config
	Clients    *awsclient.Clients
	Jobs       *store.Jobs
	Deliveries *store.Deliveries
	Blobs      *blob.Store
	Queue      *queue.Client
	Log        *slog.Logger
	Now        func() time.Time
}

// Option adjusts what New builds.
type Option func(*options)

type options struct {
	aws    []awsclient.Option
	now    func() time.Time
	sender pipeline.Sender
	critic critic.Critic
}

// WithAWSOptions passes options to the SDK config (fault injection).
func WithAWSOptions(o ...awsclient.Option) Option {
	return func(x *options) { x.aws = append(x.aws, o...) }
}

// WithClock fixes the clock.
func WithClock(now func() time.Time) Option { return func(x *options) { x.now = now } }

// New builds the App.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.now == nil {
		o.now = time.Now
	}
	clients, err := awsclient.New(ctx, cfg.Endpoints, o.aws...)
	if err != nil {
		return nil, err
	}
	return &App{
		Config: cfg, Clients: clients, Log: log, Now: o.now,
		Jobs:       store.NewJobs(clients.DynamoDB, cfg.JobsTable, o.now),
		Deliveries: store.NewDeliveries(clients.DynamoDB, cfg.DeliveriesTable, o.now),
		Blobs:      blob.New(clients.S3, cfg.PayloadBucket),
		Queue:      queue.New(clients.SQS, cfg.Queues),
	}, nil
}

// API returns the HTTP API handler (intake, jobs, health).
func (a *App) API() (*api.Handler, error) {
	if a.Config.WebhookSecret == "" {
		return nil, fmt.Errorf("%s is not set: webhooks cannot be verified", config.EnvWebhookSecret)
	}
	return &api.Handler{
		Sources: map[string]api.Parser{"generic": webhook.Generic{Secret: []byte(a.Config.WebhookSecret)}},
		Intake:  &api.Intake{Jobs: a.Jobs, Blobs: a.Blobs, Queue: a.Queue, Log: a.Log, Now: a.Now, TTL: a.Config.IdempotencyTTL},
		Jobs:    a.Jobs, Deliveries: a.Deliveries, Log: a.Log,
		Ready: func(ctx context.Context) error {
			_, err := a.Clients.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Config.JobsTable),
				Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "HEALTH"}}})
			return err
		},
	}, nil
}

func (a *App) base() pipeline.Base {
	return pipeline.Base{Jobs: a.Jobs, Blobs: a.Blobs, Queue: a.Queue, Log: a.Log, Now: a.Now}
}

// Fetch returns the fetch stage's work.
func (a *App) Fetch() *pipeline.Fetch {
	return &pipeline.Fetch{Base: a.base(), HTTP: pipeline.NewDiffHTTPClient(a.Config.AllowPrivateDiffs, 20*time.Second)}
}

// Review returns the llm stage's work, with the offline critic.
func (a *App) Review() *pipeline.Review {
	return &pipeline.Review{Base: a.base(), Critic: critic.NewOffline()}
}

// Notify returns the notify stage's work. sender may replace SES (fault
// injection in tests); nil uses SES v2.
func (a *App) Notify(sender pipeline.Sender) (*pipeline.Notify, error) {
	r, err := mail.NewRenderer()
	if err != nil {
		return nil, err
	}
	if sender == nil {
		sender = mail.NewSender(a.Clients.SES, a.Config.MailFrom, a.Config.ConfigurationSet)
	}
	n := &pipeline.Notify{Base: a.base(), Deliveries: a.Deliveries, Renderer: r, Sender: sender,
		Lease: a.Config.DeliveryLease, Grace: a.Config.ReconcileGrace}
	return n, nil
}

// Feedback returns the feedback function's handler.
func (a *App) Feedback() *feedback.Handler {
	return &feedback.Handler{Deliveries: a.Deliveries, Log: a.Log}
}

// Sweeper returns the scheduled sweeper.
func (a *App) Sweeper() *sweeper.Sweeper {
	return &sweeper.Sweeper{Jobs: a.Jobs, Deliveries: a.Deliveries, Queue: a.Queue, Log: a.Log, Now: a.Now,
		StuckAfter: a.Config.SweepStuckAfter, EvidenceWindow: a.Config.EvidenceWindow}
}

// Runner wraps a stage's work in the shared SQS batch runner.
func (a *App) Runner(s job.Stage, fn stage.Func, opts ...stage.Option) *stage.Runner {
	return stage.New(s, a.Config.Queues.Queue[s], fn, a.Queue, a.Jobs, a.Log, opts...)
}

// StageFunc returns the work of a named stage.
func (a *App) StageFunc(s job.Stage) (stage.Func, error) {
	switch s {
	case job.StageFetch:
		return a.Fetch().Handle, nil
	case job.StageLLM:
		return a.Review().Handle, nil
	case job.StageNotify:
		n, err := a.Notify(nil)
		if err != nil {
			return nil, err
		}
		return n.Handle, nil
	}
	return nil, fmt.Errorf("unknown stage %q", s)
}
