// Package app wires adapters into handlers from a Config. Every function's
// main and the local stack build the same App, so what runs locally is what
// runs in Lambda.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

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
	"github.com/criticizer/criticizer/internal/ratelimit"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/sweeper"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/webhook"
)

// App holds the adapters and the handlers built over them.
type App struct {
	Config     config.Config
	Clients    *awsclient.Clients
	Jobs       *store.Jobs
	Deliveries *store.Deliveries
	Evidence   *store.Evidence
	Recipients *store.Recipients
	// Signer mints and verifies unsubscribe tokens; nil without a key.
	Signer *unsubscribe.Signer
	Blobs  *blob.Store
	Queue  *queue.Client
	Log    *slog.Logger
	Now    func() time.Time
	// Critic reviews diffs in the llm stage, chosen by CRITICIZER_CRITIC.
	Critic critic.Critic
	// Sources fetches changelists from the configured code review systems;
	// Directory resolves their reviewers' addresses (nil: none).
	Sources   source.Router
	Directory source.Directory
}

// Option adjusts what New builds.
type Option func(*options)

type options struct {
	aws    []awsclient.Option
	now    func() time.Time
	critic critic.Critic
}

// WithAWSOptions passes options to the SDK config (fault injection).
func WithAWSOptions(o ...awsclient.Option) Option {
	return func(x *options) { x.aws = append(x.aws, o...) }
}

// WithClock fixes the clock.
func WithClock(now func() time.Time) Option { return func(x *options) { x.now = now } }

// WithCritic replaces the configured critic (tests).
func WithCritic(c critic.Critic) Option { return func(x *options) { x.critic = c } }

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
	if cfg.SecretsARN != "" {
		// Several secrets: a function's own, and ones it shares (the
		// unsubscribe signing key is held by intake and notify). A key set
		// by two secrets takes the first one's value.
		values := map[string]string{}
		for _, arn := range strings.Split(cfg.SecretsARN, ",") {
			if arn = strings.TrimSpace(arn); arn == "" {
				continue
			}
			v, err := loadSecret(ctx, clients.Config, cfg.SecretsManagerEndpoint, arn)
			if err != nil {
				return nil, err
			}
			for k, x := range v {
				if _, ok := values[k]; !ok {
					values[k] = x
				}
			}
		}
		if cfg, err = cfg.ApplySecrets(values); err != nil {
			return nil, err
		}
	}
	a := &App{
		Config: cfg, Clients: clients, Log: log, Now: o.now,
		Jobs:       store.NewJobs(clients.DynamoDB, cfg.JobsTable, o.now),
		Deliveries: store.NewDeliveries(clients.DynamoDB, cfg.DeliveriesTable, o.now),
		Evidence:   store.NewEvidence(clients.DynamoDB, cfg.JobsTable, o.now),
		Recipients: store.NewRecipients(clients.DynamoDB, cfg.JobsTable, o.now),
		Blobs:      blob.New(clients.S3, cfg.PayloadBucket),
		Queue:      queue.New(clients.SQS, cfg.Queues),
		Critic:     o.critic,
	}
	if a.Critic == nil {
		if a.Critic, err = newCritic(cfg, clients.Config); err != nil {
			return nil, err
		}
	}
	if cfg.UnsubscribeKey != "" {
		if a.Signer, err = unsubscribe.NewSigner(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious); err != nil {
			return nil, err
		}
		if a.Signer.Rotating() {
			// A reminder to remove the previous key once old emails no
			// longer matter; the keys themselves are never logged.
			a.Log.Info("unsubscribe key rotation: links signed with the previous key still verify", "setting", config.EnvUnsubscribeKeyPrevious)
		}
	}
	a.Sources = sources(cfg, o.now)
	dir, err := cfg.Directory()
	if err != nil {
		return nil, err
	}
	if dir != nil {
		a.Directory = dir
	}
	return a, nil
}

// newCritic builds the critic CRITICIZER_CRITIC names.
func newCritic(cfg config.Config, awsCfg aws.Config) (critic.Critic, error) {
	switch cfg.Critic {
	case "", config.CriticOffline:
		return critic.NewOffline(), nil
	case config.CriticBedrock:
		// The stage runner owns retries (backoff, attempt budget, dead
		// letters); SDK retries would multiply them.
		client := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) { o.RetryMaxAttempts = 1 })
		return critic.NewBedrock(client, cfg.BedrockModelID)
	case config.CriticOpenAI:
		return critic.NewOpenAI(critic.OpenAIConfig{BaseURL: cfg.OpenAI.BaseURL, APIKey: cfg.OpenAI.APIKey, Model: cfg.OpenAI.Model})
	}
	return nil, fmt.Errorf("%s: unknown critic %q", config.EnvCritic, cfg.Critic)
}

// sources builds the fetchers of the code review systems. They do not
// depend on the webhook credentials (the fetch function need not hold
// them): GitHub and GitLab always have one (public API roots by default),
// Gerrit once its server's URL is set. A job only exists for a source
// intake routed.
func sources(cfg config.Config, now func() time.Time) source.Router {
	r := source.Router{
		"github": &source.GitHub{BaseURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, MaxDiffBytes: pipeline.MaxDiffBytes, Now: now},
		"gitlab": &source.GitLab{BaseURL: cfg.GitLab.APIURL, Token: cfg.GitLab.Token, MaxDiffBytes: pipeline.MaxDiffBytes, Now: now},
		"gerrit": unconfigured{fmt.Sprintf("%s is not set: the fetch stage cannot reach the Gerrit server", config.EnvGerritAPIURL)},
	}
	if cfg.Gerrit.APIURL != "" {
		r["gerrit"] = &source.Gerrit{BaseURL: cfg.Gerrit.APIURL, Username: cfg.Gerrit.Username, Password: cfg.Gerrit.Password,
			MaxDiffBytes: pipeline.MaxDiffBytes, Now: now}
	}
	return r
}

// unconfigured is the fetcher of a source missing its settings: every
// fetch fails permanently (dead-lettered at once), saying what to set.
type unconfigured struct{ why string }

func (u unconfigured) Fetch(context.Context, source.Ref) (source.Changelist, error) {
	return source.Changelist{}, retry.Permanent(retry.RuntimeBug, errors.New(u.why))
}

// API returns the HTTP API handler (intake, jobs, health). Each source with
// its webhook credential set is routed; the others answer 404 "source not
// configured". At least one must be configured.
func (a *App) API() (*api.Handler, error) {
	c := a.Config
	parsers := map[string]api.Parser{}
	if c.WebhookSecret != "" {
		parsers["generic"] = webhook.Generic{Secret: []byte(c.WebhookSecret)}
	}
	if c.GitHub.Configured() {
		parsers["github"] = webhook.GitHub{Secret: []byte(c.GitHub.WebhookSecret)}
	}
	if c.GitLab.Configured() {
		gl := webhook.GitLab{Token: []byte(c.GitLab.WebhookToken), SigningSecret: c.GitLab.SigningSecret, Now: a.Now}
		if err := gl.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvGitLabSigningSecret, err)
		}
		parsers["gitlab"] = gl
	}
	if c.Gerrit.Configured() {
		parsers["gerrit"] = webhook.Gerrit{Token: []byte(c.Gerrit.WebhookToken)}
	}
	if len(parsers) == 0 {
		return nil, fmt.Errorf("no webhook source is configured: set %s, %s, %s (or %s) or %s",
			config.EnvWebhookSecret, config.EnvGitHubWebhookSecret, config.EnvGitLabWebhookToken, config.EnvGitLabSigningSecret, config.EnvGerritWebhookToken)
	}
	pages, err := mail.NewRenderer()
	if err != nil {
		return nil, err
	}
	admin := a.admin(pages)
	return &api.Handler{
		Sources: parsers,
		Admin:   admin,
		Intake: &api.Intake{Jobs: a.Jobs, Blobs: a.Blobs, Queue: a.Queue, Log: a.Log, Now: a.Now, TTL: c.IdempotencyTTL,
			Versions: a.Jobs},
		Jobs: a.Jobs, Deliveries: a.Deliveries, Log: a.Log,
		Unsubscribe: &api.Unsubscribe{Signer: a.Signer, Recipients: a.Recipients, Pages: pages, Log: a.Log},
		Ready: func(ctx context.Context) error {
			_, err := a.Clients.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Config.JobsTable),
				Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "HEALTH"}}})
			return err
		},
	}, nil
}

// admin builds the admin API, off (nil) unless CRITICIZER_ADMIN_API_KEY
// is set. Previews render the mail templates notify uses.
func (a *App) admin(r *mail.Renderer) *api.Admin {
	if a.Config.AdminAPIKey == "" {
		return nil
	}
	return &api.Admin{APIKey: a.Config.AdminAPIKey, Jobs: a.Jobs, Queue: a.Queue, Log: a.Log,
		Audience: audience{a.Recipients}, Previewer: r,
		IsUnknownTemplate: func(err error) bool { return errors.Is(err, mail.ErrUnknownTemplate) }}
}

// The mail renderer is the admin API's previewer.
var _ api.Previewer = (*mail.Renderer)(nil)

// audience answers a rerun's dry run with the decision notify would take
// for each recipient: send, or the status an unsubscribe or a suppression
// settles the row as (the same Standing.SkipAs notify's gate applies).
type audience struct{ r *store.Recipients }

func (a audience) Decide(ctx context.Context, source, changelistID, recipient string) (string, error) {
	id := unsubscribe.RecipientID(recipient)
	st, err := a.r.Standings(ctx, []string{id})
	if err != nil {
		return "", err
	}
	if status, skip := st[id].SkipAs(unsubscribe.Repository(source, changelistID)); skip {
		return string(status), nil
	}
	return api.DecisionSend, nil
}

func (a *App) base() pipeline.Base {
	return pipeline.Base{Jobs: a.Jobs, Blobs: a.Blobs, Queue: a.Queue, Log: a.Log, Now: a.Now}
}

// Fetch returns the fetch stage's work.
func (a *App) Fetch() *pipeline.Fetch {
	return &pipeline.Fetch{Base: a.base(), HTTP: pipeline.NewDiffHTTPClient(a.Config.AllowPrivateDiffs, 20*time.Second),
		Source: a.Sources, Directory: a.Directory}
}

// Review returns the llm stage's work, with the configured critic.
func (a *App) Review() *pipeline.Review {
	return &pipeline.Review{Base: a.base(), Critic: a.Critic}
}

// Notify returns the notify stage's work. sender may replace SES (fault
// injection in tests); nil uses SES v2.
func (a *App) Notify(sender pipeline.Sender) (*pipeline.Notify, error) {
	r, err := mail.NewRenderer()
	if err != nil {
		return nil, err
	}
	n := &pipeline.Notify{Base: a.base(), Deliveries: a.Deliveries, Renderer: r, Sender: sender,
		Evidence: a.Evidence, ConfigurationSet: a.Config.ConfigurationSet,
		Lease: a.Config.DeliveryLease, Margin: a.Config.EvidenceMargin, Recipients: a.Recipients,
		Signer: a.Signer, PublicURL: a.Config.PublicURL}
	if sender == nil {
		ses := mail.NewSender(a.Clients.SES, a.Config.MailFrom, a.Config.ConfigurationSet)
		ses.ProbeAddress = a.Config.ProbeAddress
		n.Sender = ses
		if a.Config.ProbeAddress != "" {
			n.Prober = ses
		}
	}
	if a.Config.MaxSendRate > 0 {
		// Every notifier counts its sends in the same per-second windows
		// (internal/ratelimit), whatever sender is in use.
		n.Pacer = ratelimit.New(ratelimit.Dynamo{DB: a.Clients.DynamoDB, Table: a.Config.JobsTable, Name: "ses"}, a.Config.MaxSendRate)
	}
	return n, nil
}

// Feedback returns the feedback function's handler.
func (a *App) Feedback() *feedback.Handler {
	return &feedback.Handler{Deliveries: a.Deliveries, Evidence: a.Evidence, Recipients: a.Recipients, Jobs: a.Jobs, Queue: a.Queue, Log: a.Log}
}

// Sweeper returns the scheduled sweeper.
func (a *App) Sweeper() *sweeper.Sweeper {
	return &sweeper.Sweeper{Jobs: a.Jobs, Deliveries: a.Deliveries, Evidence: a.Evidence, ConfigurationSet: a.Config.ConfigurationSet,
		Queue: a.Queue, Log: a.Log, Now: a.Now,
		StuckAfter: a.Config.SweepStuckAfter, EvidenceWindow: a.Config.EvidenceWindow, Margin: a.Config.EvidenceMargin}
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

// loadSecret reads a CRITICIZER_SECRETS_ARN secret (a JSON object of
// variable names to string values) with Secrets Manager's GetSecretValue.
// App.New calls it once, at function init, so a warm Lambda does not read it
// again. The region is the secret ARN's. Errors name the secret and the
// failure, never a value.
func loadSecret(ctx context.Context, cfg aws.Config, endpoint, arn string) (map[string]string, error) {
	client := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if parts := strings.Split(arn, ":"); len(parts) >= 6 && parts[0] == "arn" && parts[3] != "" {
			o.Region = parts[3]
		}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvSecretsARN, err)
	}
	var values map[string]string
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &values); err != nil {
		return nil, fmt.Errorf("%s: the secret must be a JSON object of variable names to string values", config.EnvSecretsARN)
	}
	return values, nil
}
