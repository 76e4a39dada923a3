// Package intake builds the intake function: the HTTP API behind API
// Gateway (webhooks, job status, unsubscribe, admin).
package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/webhook"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the API handler. Each source with its webhook credential set
// is routed; the others answer 404 "source not configured". At least one
// must be configured.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*api.Handler, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	if cfg, err = secrets.Apply(ctx, b.AWS, cfg); err != nil {
		return nil, err
	}
	parsers, err := Parsers(cfg, b.Now)
	if err != nil {
		return nil, err
	}
	signer, err := wire.Signer(cfg, log)
	if err != nil {
		return nil, err
	}
	pages, err := mail.NewRenderer()
	if err != nil {
		return nil, err
	}
	blobs := blob.New(blob.NewS3(b.AWS, cfg.Endpoints.S3), cfg.PayloadBucket)
	// Job status links are signed with a key derived from the unsubscribe
	// key (a generated secret intake holds); without one there is no
	// status route but through the admin API key.
	var status *api.StatusLinks
	if cfg.UnsubscribeKey != "" {
		status = api.NewStatusLinks(cfg.UnsubscribeKey)
	}
	rosters := dynamo.NewRosters(b.DynamoDB, cfg.JobsTable, b.Now)
	rosters.Retention = cfg.Retention
	voteSigner, err := wire.VoteSigner(cfg)
	if err != nil {
		return nil, err
	}
	prefSigner, err := wire.PrefsSigner(cfg)
	if err != nil {
		return nil, err
	}
	votes := dynamo.NewVotes(b.DynamoDB, cfg.JobsTable, b.Now)
	votes.Retention = cfg.Retention
	// A wrong keeps the finding out of the reader's later emails (R-VOTE-3).
	dismissals := dynamo.NewDismissals(b.DynamoDB, cfg.JobsTable, b.Now)
	dismissals.Retention = cfg.Retention
	// The team's votes per rule and repository (R-LEARN-1), and the
	// operator's decisions on them (R-LEARN-2, /admin/learnings).
	learnings := dynamo.NewLearnings(b.DynamoDB, cfg.JobsTable, b.Now)
	directory := dynamo.NewDirectory(b.DynamoDB, cfg.JobsTable, b.Now)
	h := &api.Handler{
		Sources: parsers,
		Intake: &api.Intake{Jobs: b.Jobs, Blobs: blobs, Queue: b.Queue, Log: log, Now: b.Now, TTL: cfg.IdempotencyTTL,
			Versions: b.Jobs, Status: status, Rosters: rosters,
			// Reviewer webhooks: replays dropped, refreshes gathered (R-BUDGET-3).
			ReviewerReplays: &api.ReviewerReplays{Store: dynamo.NewReplays(b.DynamoDB, cfg.JobsTable, b.Now),
				Window: cfg.Budgets.ReviewerReplayWindow, RefreshWindow: cfg.Budgets.ReviewerRefreshWindow}},
		Status: status,
		Jobs:   b.Jobs, Deliveries: b.Deliveries, Log: log,
		Unsubscribe: &api.Unsubscribe{Signer: signer, Recipients: b.Recipients, Pages: pages, Log: log},
		Votes: &api.Votes{Signer: voteSigner, Store: votes, Pages: pages, Log: log, Now: b.Now,
			Marks: dismissals, Rows: b.Deliveries, Jobs: b.Jobs, Learnings: learnings, Directory: directory},
		// The preference page every email's footer links (R-PREF-2).
		Preferences: &api.Preferences{Signer: prefSigner, Store: b.Recipients, Pages: pages, Log: log, Now: b.Now},
		Ready: func(ctx context.Context) error {
			_, err := b.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cfg.JobsTable),
				Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "HEALTH"}}})
			return err
		},
	}
	if cfg.AdminAPIKey != "" {
		// The admin API is off (404) unless its key is set. Previews render
		// the mail templates notify uses.
		h.Admin = &api.Admin{APIKey: cfg.AdminAPIKey, Status: status, Jobs: b.Jobs, Queue: b.Queue, Log: log,
			Audience: audience{b.Recipients, cfg.AllowedRecipientDomains}, Previewer: pages,
			IsUnknownTemplate: func(err error) bool { return errors.Is(err, mail.ErrUnknownTemplate) },
			Directory:         directory,
			Learnings:         learnings, LearnAfter: cfg.LearnAfter, Now: b.Now}
	}
	return h, nil
}

// Parsers returns the webhook parser of each configured source, checking
// the credentials' formats (a GitLab signing secret must decode).
func Parsers(cfg config.Config, now func() time.Time) (map[string]api.Parser, error) {
	parsers := map[string]api.Parser{}
	if cfg.WebhookSecret != "" {
		parsers["generic"] = webhook.Generic{Secret: []byte(cfg.WebhookSecret)}
	}
	if cfg.GitHub.Configured() {
		parsers["github"] = webhook.GitHub{Secret: []byte(cfg.GitHub.WebhookSecret)}
	}
	if cfg.GitLab.Configured() {
		gl := webhook.GitLab{Token: []byte(cfg.GitLab.WebhookToken), SigningSecret: cfg.GitLab.SigningSecret, Now: now}
		if err := gl.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvGitLabSigningSecret, err)
		}
		parsers["gitlab"] = gl
	}
	if cfg.Gerrit.Configured() {
		parsers["gerrit"] = webhook.Gerrit{Token: []byte(cfg.Gerrit.WebhookToken)}
	}
	if len(parsers) == 0 {
		return nil, fmt.Errorf("no webhook source is configured: set %s, %s, %s (or %s) or %s",
			config.EnvWebhookSecret, config.EnvGitHubWebhookSecret, config.EnvGitLabWebhookToken, config.EnvGitLabSigningSecret, config.EnvGerritWebhookToken)
	}
	return parsers, nil
}

// The mail renderer is the admin API's previewer.
var _ api.Previewer = (*mail.Renderer)(nil)

// audience answers a rerun's dry run with the decision notify would take
// for each recipient: send, or the status an unsubscribe or a suppression
// settles the row as (the same Standing.SkipAs notify's gate applies),
// or skipped_domain for an address outside the allowed domains
// (R-RECIPIENT-1), which notify settles first.
type audience struct {
	r       *dynamo.Preferences
	domains delivery.Domains
}

func (a audience) Decide(ctx context.Context, source, changelistID, recipient string) (string, error) {
	if !a.domains.Allows(recipient) {
		return string(delivery.StatusSkippedDomain), nil
	}
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
