// Package config reads every function's settings from environment
// variables, the way Lambda passes them. docs/configuration.md's table
// lists each variable (TestConfiguration_EveryVariableHasARow in
// internal/docs keeps the two in step).
//
// It is a leaf of plain values: it checks what can be checked from the
// values alone (formats, durations, lengths) and imports no adapter. What
// needs an adapter to check — a GitLab signing secret's encoding, the
// reviewer directory's shape — is checked by the function that uses it,
// at init (internal/wire).
package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// Endpoints overrides AWS service endpoints; empty fields use AWS's own.
// The variables are the SDK's standard ones (AWS_ENDPOINT_URL_<SERVICE>),
// read here once so the override is visible in one place.
type Endpoints struct {
	DynamoDB       string
	SQS            string
	SES            string
	S3             string
	SecretsManager string
}

// EndpointsFromEnv reads the SDK's standard endpoint variables, with
// AWS_ENDPOINT_URL as the fallback for each service.
func EndpointsFromEnv(getenv func(string) string) Endpoints {
	all := getenv("AWS_ENDPOINT_URL")
	pick := func(name string) string {
		if v := getenv("AWS_ENDPOINT_URL_" + name); v != "" {
			return v
		}
		return all
	}
	return Endpoints{DynamoDB: pick("DYNAMODB"), SQS: pick("SQS"), SES: pick("SESV2"), S3: pick("S3"),
		SecretsManager: pick("SECRETS_MANAGER")}
}

// Local reports whether any endpoint is overridden, i.e. we talk to emulators.
func (e Endpoints) Local() bool {
	return e.DynamoDB != "" || e.SQS != "" || e.SES != "" || e.S3 != ""
}

// Queues names each stage's queue and dead-letter queue.
type Queues struct {
	Queue map[job.Stage]string
	DLQ   map[job.Stage]string
}

// Config is the whole configuration. Each function uses the part it needs.
type Config struct {
	Endpoints        Endpoints
	JobsTable        string
	DeliveriesTable  string
	PayloadBucket    string
	Queues           Queues
	WebhookSecret    string
	MailFrom         string
	ConfigurationSet string
	IdempotencyTTL   time.Duration
	// LearnAfter is how many distinct readers must mark a rule wrong in a
	// repository, fewer marking it useful, before it is proposed as a
	// learning (CRITICIZER_LEARN_AFTER, R-LEARN-1).
	LearnAfter int
	// Retention is how long jobs, delivery rows and audit items are kept
	// (DynamoDB TTL); zero: forever. Changelist heads, preferences and
	// suppressions never expire.
	Retention time.Duration
	// EvidenceMargin is the publish bound the evidence rule assumes: the
	// longest SES takes to get a message's Send event onto the feedback
	// queue after accepting it (R-EVIDENCE-2, R-EVIDENCE-7). Read by
	// notify, feedback and the sweeper, so it stays here.
	EvidenceMargin time.Duration
	// EvidenceCounterLag is how stale SQS's approximate counters may be:
	// an empty reading of the feedback queue speaks for messages older
	// than this (internal/drain).
	EvidenceCounterLag time.Duration
	// UncertainSend is what a send whose answer was lost does once the
	// evidence path caught up past it with no event naming it
	// (CRITICIZER_UNCERTAIN_SEND, R-EVIDENCE-9).
	UncertainSend delivery.UncertainSend
	// FeedbackQueueURL and FeedbackDLQURL are the feedback queue and its
	// DLQ, whose counters the sweeper reads (internal/drain).
	FeedbackQueueURL, FeedbackDLQURL string
	// ProbeAddress receives evidence probes (the SES mailbox simulator by
	// default); empty: no probes.
	ProbeAddress string
	// AllowedRecipientDomains are the domains mail may go to (the probe
	// address aside); zero: every domain (recipients.go).
	AllowedRecipientDomains delivery.Domains
	AllowPrivateDiffs       bool
	// OutboundWebhooks is CRITICIZER_OUTBOUND_WEBHOOKS, the signed webhook
	// destinations (a JSON array, secrets in it: a secret setting, read
	// by internal/outhook); AllowPrivateWebhooks lets them be loopback or
	// private addresses (the local stack only) (outhooks.go).
	OutboundWebhooks     string
	AllowPrivateWebhooks bool
	// Channels is CRITICIZER_CHANNELS: the deployment has a channel other
	// than email (a webhook destination, the code host's status), so the
	// stages announce each version's phases to notify (channels.go).
	Channels bool
	// DiffURLPorts are the ports a diff_url may use; nil means 80 and 443,
	// a single 0 any port (CRITICIZER_DIFF_URL_PORTS, "*").
	DiffURLPorts []int
	// SESStoreURL, when set, is the SES emulator's base URL; the notifier
	// then reads provider evidence from its store (local stack only).
	SESStoreURL string
	LogLevel    string
	// LLM, Notify, Sweep and Reply are the settings only the llm, notify,
	// sweeper and reply functions read (stages.go).
	LLM    LLM
	Notify Notify
	Sweep  Sweep
	Reply  Reply

	// PublicURL is the API's public base URL, under which the notifier
	// builds unsubscribe links (https://<api>/unsubscribe/<token>).
	PublicURL string
	// UnsubscribeKey signs unsubscribe tokens: the notifier mints them, the
	// API verifies them, so both hold it (a generated secret when
	// deployed). Empty, or no PublicURL: emails carry no unsubscribe link.
	UnsubscribeKey string
	// UnsubscribeKeyPrevious is the key UnsubscribeKey replaced, kept during
	// a rotation: tokens it signed (links in emails already sent) still
	// verify, new ones are signed with UnsubscribeKey only. Optional.
	UnsubscribeKeyPrevious string

	// MailDomain is MailFrom's domain, under which the conversation roots
	// of References and In-Reply-To are named; ListID is the List-Id every
	// email carries (CRITICIZER_LIST_ID, listid.go).
	MailDomain string
	ListID     string

	// InboundDomain is the domain replies are received at (R-REPLY-1);
	// empty: replies are off (inbound.go). Read by notify (Reply-To) and
	// the reply function, so it stays here.
	InboundDomain string

	// GeneratedPaths are the deployment's globs of generated files
	// (EnvGeneratedPaths, R-CRITIC-7): read by fetch and llm, so it stays
	// here.
	GeneratedPaths []string
	// ContextFileBytes caps a changed file the fetch stage reads at the
	// version's head for the code around its hunks (EnvContextFileBytes,
	// R-CONTEXT-2); 0 reads none.
	ContextFileBytes int
	// Budgets bound model runs, team expansion and reviewer webhooks
	// (budgets.go).
	Budgets Budgets

	// The code review systems. A source whose webhook credential is unset
	// is not routed.
	GitHub GitHub
	GitLab GitLab
	Gerrit Gerrit
	// ReviewerDirectory is the JSON of source.StaticDirectory (usernames to
	// addresses), already read from its file when given as "@/path.json";
	// empty means no directory (reviewers without an address the source
	// discloses get no email).
	ReviewerDirectory string

	// AdminAPIKey turns the admin API (/admin/*) on: callers present it
	// as a bearer token or X-Api-Key. Empty: every /admin route answers
	// 404, as if it did not exist.
	AdminAPIKey string

	// SecretsARN names Secrets Manager secrets (comma-separated ARNs), each
	// a JSON object whose keys are names in SecretEnv; they fill in those
	// that the environment leaves unset. Read once at init (see app.New).
	SecretsARN string

	// MaxReceiveCount is the stage queues' redrive maxReceiveCount, as
	// deployed (deadlines.go).
	MaxReceiveCount int
}

// Critics.
const (
	CriticOffline = "offline"
	CriticBedrock = "bedrock"
	CriticOpenAI  = "openai"
)

// DefaultMaxSendRate is SES's maximum send rate for a new production
// account, emails per second.
const DefaultMaxSendRate = 14

// DefaultProbeAddress is the SES mailbox simulator's address that accepts
// everything: evidence probes reach nobody.
const DefaultProbeAddress = "success@simulator.amazonses.com"

// Default API roots.
const (
	DefaultGitHubAPIURL = "https://api.github.com"
	DefaultGitLabAPIURL = "https://gitlab.com/api/v4"
	DefaultOpenAIURL    = "https://api.openai.com"
)

// Env names, in one place.
const (
	EnvJobsTable         = "CRITICIZER_JOBS_TABLE"
	EnvDeliveriesTable   = "CRITICIZER_DELIVERIES_TABLE"
	EnvPayloadBucket     = "CRITICIZER_PAYLOAD_BUCKET"
	EnvWebhookSecret     = "CRITICIZER_WEBHOOK_SECRET"
	EnvMailFrom          = "CRITICIZER_MAIL_FROM"
	EnvConfigurationSet  = "CRITICIZER_SES_CONFIGURATION_SET"
	EnvIdempotencyTTL    = "CRITICIZER_IDEMPOTENCY_TTL"
	EnvRetention         = "CRITICIZER_RETENTION"
	EnvDeliveryLease     = "CRITICIZER_DELIVERY_LEASE"
	EnvEvidenceMargin    = "CRITICIZER_EVIDENCE_MARGIN"
	EnvCounterLag        = "CRITICIZER_EVIDENCE_COUNTER_LAG"
	EnvFeedbackQueueURL  = "CRITICIZER_FEEDBACK_QUEUE_URL"
	EnvFeedbackDLQURL    = "CRITICIZER_FEEDBACK_DLQ_URL"
	EnvProbeAddress      = "CRITICIZER_EVIDENCE_PROBE_ADDRESS"
	EnvAllowPrivateDiffs = "CRITICIZER_ALLOW_PRIVATE_DIFF_URLS"
	EnvDiffURLPorts      = "CRITICIZER_DIFF_URL_PORTS"
	EnvSweepStuckAfter   = "CRITICIZER_SWEEP_STUCK_AFTER"
	EnvEvidenceWindow    = "CRITICIZER_EVIDENCE_WINDOW"
	// EnvUncertainSend is what a send whose answer was lost does once the
	// evidence path has caught up past it with no event naming it:
	// resend (the default) or hold (evidence.go, R-EVIDENCE-9).
	EnvUncertainSend = "CRITICIZER_UNCERTAIN_SEND"
	// EnvSweepEvery is the sweeper's schedule: consecutive readings of the
	// feedback queue further apart than twice this break a run of clear
	// readings (internal/drain).
	EnvSweepEvery     = "CRITICIZER_SWEEP_EVERY"
	EnvSESStoreURL    = "CRITICIZER_LOCAL_SES_STORE_URL"
	EnvLogLevel       = "LOG_LEVEL"
	EnvPublicURL      = "CRITICIZER_PUBLIC_URL"
	EnvUnsubscribeKey = "CRITICIZER_UNSUBSCRIBE_KEY"
	// EnvUnsubscribeKeyPrevious is the key being rotated out: verified,
	// never used to sign.
	EnvUnsubscribeKeyPrevious = "CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS"
	EnvMaxSendRate            = "CRITICIZER_MAX_SEND_RATE"

	EnvCritic         = "CRITICIZER_CRITIC"
	EnvBedrockModelID = "CRITICIZER_BEDROCK_MODEL_ID"
	EnvOpenAIBaseURL  = "CRITICIZER_OPENAI_BASE_URL"
	EnvOpenAIModel    = "CRITICIZER_OPENAI_MODEL"
	EnvOpenAIAPIKey   = "CRITICIZER_OPENAI_API_KEY"
	// The model review's settings (bedrock and openai critics).
	EnvLLMMaxFindings           = "CRITICIZER_LLM_MAX_FINDINGS"
	EnvReviewInstructions       = "CRITICIZER_REVIEW_INSTRUCTIONS"
	EnvReviewInstructionsByRepo = "CRITICIZER_REVIEW_INSTRUCTIONS_BY_REPO"
	EnvIncrementalReview        = "CRITICIZER_INCREMENTAL_REVIEW"
	EnvMinSeverity              = "CRITICIZER_MIN_SEVERITY"
	DefaultLLMMaxFindings       = 5
	DefaultRetention            = 90 * 24 * time.Hour
	// DefaultEvidenceMargin is the publish bound (EvidenceMargin): SES
	// documents none; its events usually reach the queue in seconds, and
	// the feedback function counts every Send event later than this
	// (LateSendEvents). A larger bound only delays the resend of a send
	// whose answer was lost.
	DefaultEvidenceMargin = 5 * time.Minute
	// DefaultSweepEvery is the deployed sweeper schedule (every minute).
	DefaultSweepEvery = time.Minute
	// DefaultCounterLag is SQS's documented "at least 1 minute" for its
	// approximate counters to settle, doubled.
	DefaultCounterLag          = 2 * time.Minute
	MaxReviewInstructionsRunes = 2000

	EnvGitHubWebhookSecret = "CRITICIZER_GITHUB_WEBHOOK_SECRET"
	EnvGitHubToken         = "CRITICIZER_GITHUB_TOKEN"
	EnvGitHubAPIURL        = "CRITICIZER_GITHUB_API_URL"

	// The GitHub App (githubapp.go, R-SOURCE-4): all may travel in the
	// fetch function's secret; the private key must.
	EnvGitHubAppID             = "CRITICIZER_GITHUB_APP_ID"
	EnvGitHubAppInstallationID = "CRITICIZER_GITHUB_APP_INSTALLATION_ID"
	EnvGitHubAppPrivateKey     = "CRITICIZER_GITHUB_APP_PRIVATE_KEY"

	EnvGitLabWebhookToken  = "CRITICIZER_GITLAB_WEBHOOK_TOKEN"
	EnvGitLabSigningSecret = "CRITICIZER_GITLAB_SIGNING_SECRET"
	EnvGitLabToken         = "CRITICIZER_GITLAB_TOKEN"
	EnvGitLabAPIURL        = "CRITICIZER_GITLAB_API_URL"
	EnvGerritWebhookToken  = "CRITICIZER_GERRIT_WEBHOOK_TOKEN"
	EnvGerritAPIURL        = "CRITICIZER_GERRIT_API_URL"
	EnvGerritUsername      = "CRITICIZER_GERRIT_USERNAME"
	EnvGerritPassword      = "CRITICIZER_GERRIT_PASSWORD"
	EnvReviewerDirectory   = "CRITICIZER_REVIEWER_DIRECTORY"

	EnvAdminAPIKey = "CRITICIZER_ADMIN_API_KEY"

	EnvSecretsARN = "CRITICIZER_SECRETS_ARN"
	// Deadlines and receives (deadlines.go).
	EnvMaxReceiveCount = "CRITICIZER_MAX_RECEIVE_COUNT"
	EnvModelTimeout    = "CRITICIZER_MODEL_TIMEOUT"
)

// MinAdminAPIKeyBytes is the shortest admin API key accepted: a key is
// the only thing between the internet and a rerun that mails every
// reviewer, so it must not be guessable (generate one with
// `openssl rand -hex 32`).
const MinAdminAPIKeyBytes = 32

// MinWebhookSecretBytes is the shortest webhook secret or token accepted
// (generic, GitHub, GitLab, Gerrit; for a GitLab signing secret, the key
// it decodes to): it is all that stands between the internet and a review
// that mails every reviewer of a repository, so a short or guessable one
// is refused at start (openssl rand -hex 32). R-PRIVACY-4.
const MinWebhookSecretBytes = 32

// MinUnsubscribeKeyBytes is the shortest unsubscribe signing key accepted,
// current or previous (unsubscribe.MinKeyLen; checked here so a short key
// fails at start with the variable's name).
const MinUnsubscribeKeyBytes = 32

// QueueEnv is the variable holding a stage's queue URL, e.g.
// CRITICIZER_FETCH_QUEUE_URL; DLQEnv likewise for its dead-letter queue.
func QueueEnv(s job.Stage) string { return "CRITICIZER_" + strings.ToUpper(string(s)) + "_QUEUE_URL" }

// DLQEnv is the variable holding a stage's dead-letter queue URL.
func DLQEnv(s job.Stage) string { return "CRITICIZER_" + strings.ToUpper(string(s)) + "_DLQ_URL" }

// FromEnv reads the configuration with defaults for what may be omitted:
// the tables, queues and mail settings every function shares, then each
// area's settings in turn. The first bad value is the error.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Endpoints:        EndpointsFromEnv(getenv),
		JobsTable:        or(getenv(EnvJobsTable), "criticizer-jobs"),
		DeliveriesTable:  or(getenv(EnvDeliveriesTable), "criticizer-deliveries"),
		PayloadBucket:    or(getenv(EnvPayloadBucket), "criticizer-payloads"),
		Queues:           Queues{Queue: map[job.Stage]string{}, DLQ: map[job.Stage]string{}},
		WebhookSecret:    getenv(EnvWebhookSecret),
		MailFrom:         or(getenv(EnvMailFrom), "Criticizer <criticizer@example.com>"),
		ConfigurationSet: getenv(EnvConfigurationSet),
		SESStoreURL:      getenv(EnvSESStoreURL),
		AdminAPIKey:      getenv(EnvAdminAPIKey),
		LogLevel:         or(getenv(EnvLogLevel), "info"),
		PublicURL:        strings.TrimRight(strings.TrimSpace(getenv(EnvPublicURL)), "/"),
		UnsubscribeKey:   getenv(EnvUnsubscribeKey),

		UnsubscribeKeyPrevious: getenv(EnvUnsubscribeKeyPrevious),
	}
	for _, s := range job.Stages() {
		c.Queues.Queue[s] = getenv(QueueEnv(s))
		c.Queues.DLQ[s] = getenv(DLQEnv(s))
	}
	c.SecretsARN = strings.TrimSpace(getenv(EnvSecretsARN))
	if err := c.readCritic(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readFullReviewEvery(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readGeneratedPaths(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readContextFileBytes(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readSources(getenv); err != nil {
		return Config{}, err
	}
	if c.SecretsARN == "" {
		// With a secret, what it supplies is checked once it is applied.
		if err := c.Validate(); err != nil {
			return Config{}, err
		}
	}
	if err := c.readRetention(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readDelivery(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readDiffs(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readOutboundWebhooks(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readQuiet(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readRecipients(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readListID(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readInbound(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readLearn(getenv); err != nil {
		return Config{}, err
	}
	if err := c.readBudgets(getenv); err != nil {
		return Config{}, err
	}
	return c, nil
}

func duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: want a positive duration such as 720h, got %q", name, v)
	}
	return d, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Validate checks the settings that do not depend on one another's
// source: the critic's, each configured source's, the directory's. Error
// messages name variables, never values.
func (c Config) Validate() error {
	switch c.LLM.Critic {
	case CriticOffline:
	case CriticBedrock:
		if c.LLM.BedrockModelID == "" {
			return fmt.Errorf("%s=bedrock needs %s (a model id, inference profile id or ARN)", EnvCritic, EnvBedrockModelID)
		}
	case CriticOpenAI:
		if c.LLM.OpenAI.Model == "" {
			return fmt.Errorf("%s=openai needs %s", EnvCritic, EnvOpenAIModel)
		}
		if err := checkURL(EnvOpenAIBaseURL, c.LLM.OpenAI.BaseURL); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: want offline, bedrock or openai, got %q", EnvCritic, c.LLM.Critic)
	}
	// The API roots are checked whether or not the webhook is routed here:
	// the fetch function has the API settings without the webhook secrets.
	if err := checkURL(EnvGitHubAPIURL, c.GitHub.APIURL); err != nil {
		return err
	}
	if err := checkURL(EnvGitLabAPIURL, c.GitLab.APIURL); err != nil {
		return err
	}
	if err := c.validateGitHubApp(); err != nil {
		return err
	}
	if c.Gerrit.APIURL != "" {
		if err := checkURL(EnvGerritAPIURL, c.Gerrit.APIURL); err != nil {
			return err
		}
	}
	if c.PublicURL != "" {
		if err := checkPublicURL(c.PublicURL); err != nil {
			return err
		}
	}
	if c.UnsubscribeKey != "" && len(c.UnsubscribeKey) < MinUnsubscribeKeyBytes {
		return fmt.Errorf("%s: %d bytes, need at least %d", EnvUnsubscribeKey, len(c.UnsubscribeKey), MinUnsubscribeKeyBytes)
	}
	if c.UnsubscribeKeyPrevious != "" {
		if len(c.UnsubscribeKeyPrevious) < MinUnsubscribeKeyBytes {
			return fmt.Errorf("%s: %d bytes, need at least %d", EnvUnsubscribeKeyPrevious, len(c.UnsubscribeKeyPrevious), MinUnsubscribeKeyBytes)
		}
		if c.UnsubscribeKey == "" {
			// Verifying old links but minting none would be a half-rotated
			// deployment: say so rather than send mail without links.
			return fmt.Errorf("%s is set without %s: the previous key only verifies, the current one signs", EnvUnsubscribeKeyPrevious, EnvUnsubscribeKey)
		}
	}
	if c.AdminAPIKey != "" && len(c.AdminAPIKey) < MinAdminAPIKeyBytes {
		return fmt.Errorf("%s: want at least %d characters (e.g. openssl rand -hex 32)", EnvAdminAPIKey, MinAdminAPIKeyBytes)
	}
	return c.checkSecrets()
}

func checkURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an absolute http(s) URL", name)
	}
	if u.User != nil {
		return fmt.Errorf("%s: must not carry credentials; use the token variables", name)
	}
	return nil
}

// The outputs of the deployed stack (CDK app and SAM template alike) that
// the operator CLI reads to find a deployment; infra names its outputs
// with these so the two cannot drift.
const (
	OutputJobsTable        = "JobsTableName"
	OutputDeliveriesTable  = "DeliveriesTableName"
	OutputConfigurationSet = "ConfigurationSetName"
)

// OutputQueueURL is the stack output holding a stage's queue URL, e.g.
// FetchQueueUrl; OutputDLQURL likewise for its dead-letter queue.
func OutputQueueURL(s job.Stage) string { return outputStage(s) + "QueueUrl" }

// OutputDLQURL is the stack output holding a stage's dead-letter queue URL.
func OutputDLQURL(s job.Stage) string { return outputStage(s) + "DlqUrl" }

func outputStage(s job.Stage) string {
	if s == "" {
		return ""
	}
	return strings.ToUpper(string(s)[:1]) + string(s)[1:]
}
