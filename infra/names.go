package main

import "strings"

// Environment variable names: internal/config/config.go's names (a test
// parses that file and checks every name set here against it).
const (
	EnvJobsTable        = "CRITICIZER_JOBS_TABLE"
	EnvDeliveriesTable  = "CRITICIZER_DELIVERIES_TABLE"
	EnvPayloadBucket    = "CRITICIZER_PAYLOAD_BUCKET"
	EnvMailFrom         = "CRITICIZER_MAIL_FROM"
	EnvConfigurationSet = "CRITICIZER_SES_CONFIGURATION_SET"
	EnvIdempotencyTTL   = "CRITICIZER_IDEMPOTENCY_TTL"
	EnvDeliveryLease    = "CRITICIZER_DELIVERY_LEASE"
	EnvEvidenceMargin   = "CRITICIZER_EVIDENCE_MARGIN"
	EnvCounterLag       = "CRITICIZER_EVIDENCE_COUNTER_LAG"
	EnvFeedbackQueueURL = "CRITICIZER_FEEDBACK_QUEUE_URL"
	EnvFeedbackDLQURL   = "CRITICIZER_FEEDBACK_DLQ_URL"
	EnvSweepStuckAfter  = "CRITICIZER_SWEEP_STUCK_AFTER"
	EnvEvidenceWindow   = "CRITICIZER_EVIDENCE_WINDOW"
	// EnvSweepEvery is the sweeper's schedule, for the drain rule's run of
	// clear readings (internal/drain).
	EnvSweepEvery = "CRITICIZER_SWEEP_EVERY"
	// EnvUncertainSend is notify's choice for a send whose answer was lost
	// once the evidence path caught up past it (R-EVIDENCE-9), set from
	// context uncertainSend.
	EnvUncertainSend = "CRITICIZER_UNCERTAIN_SEND"
	EnvLogLevel      = "LOG_LEVEL"
	// EnvMaxSendRate is notify's send-rate limit, emails per second across
	// every notifier (internal/ratelimit).
	EnvMaxSendRate = "CRITICIZER_MAX_SEND_RATE"
	// EnvAllowedRecipientDomains is the domains mail may go to
	// (R-RECIPIENT-1).
	EnvAllowedRecipientDomains = "CRITICIZER_ALLOWED_RECIPIENT_DOMAINS"
	// EnvSecretsARN names a Secrets Manager secret, a JSON object of
	// setting names to values (SecretEnv: CRITICIZER_WEBHOOK_SECRET
	// and the other sources' credentials), read by the function at start.
	// Never a value in the environment.
	EnvSecretsARN = "CRITICIZER_SECRETS_ARN"
	// EnvWebhookSecret is the generic source's signing secret: the key the
	// generated secret holds.
	EnvWebhookSecret = "CRITICIZER_WEBHOOK_SECRET"
	// EnvUnsubscribeKey is the HMAC key of unsubscribe tokens: the key the
	// generated unsubscribe secret holds (intake verifies, notify mints).
	EnvUnsubscribeKey = "CRITICIZER_UNSUBSCRIBE_KEY"
	// EnvUnsubscribeKeyPrevious is the key being rotated out, which an
	// operator adds to the same secret during a rotation (docs/operations.md,
	// "Rotating the unsubscribe key"): tokens it signed still verify.
	EnvUnsubscribeKeyPrevious = "CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS"
	// EnvPublicURL is the API's public base URL, under which notify builds
	// unsubscribe links.
	EnvPublicURL = "CRITICIZER_PUBLIC_URL"
	// The llm stage's critic choice (config.go), set from context.
	EnvCritic         = "CRITICIZER_CRITIC"
	EnvBedrockModelID = "CRITICIZER_BEDROCK_MODEL_ID"
	EnvOpenAIBaseURL  = "CRITICIZER_OPENAI_BASE_URL"
	EnvOpenAIModel    = "CRITICIZER_OPENAI_MODEL"
	// The stage runner's deadlines and receives (R-STAGE-9, R-STAGE-10).
	EnvMaxReceiveCount = "CRITICIZER_MAX_RECEIVE_COUNT"
	EnvModelTimeout    = "CRITICIZER_MODEL_TIMEOUT"
)

// SecretEnv is config.SecretEnv(): the settings a CRITICIZER_SECRETS_ARN
// secret may hold (a test parses config's list and checks the two are
// equal). None of them may be in a function's environment.
var SecretEnv = []string{
	EnvWebhookSecret,
	"CRITICIZER_OPENAI_API_KEY",
	"CRITICIZER_GITHUB_WEBHOOK_SECRET", "CRITICIZER_GITHUB_TOKEN",
	"CRITICIZER_GITHUB_APP_ID", "CRITICIZER_GITHUB_APP_INSTALLATION_ID", "CRITICIZER_GITHUB_APP_PRIVATE_KEY",
	"CRITICIZER_GITLAB_WEBHOOK_TOKEN", "CRITICIZER_GITLAB_SIGNING_SECRET", "CRITICIZER_GITLAB_TOKEN",
	"CRITICIZER_GERRIT_WEBHOOK_TOKEN", "CRITICIZER_GERRIT_USERNAME", "CRITICIZER_GERRIT_PASSWORD",
	"CRITICIZER_REVIEWER_DIRECTORY",
	EnvUnsubscribeKey, EnvUnsubscribeKeyPrevious,
	"CRITICIZER_ADMIN_API_KEY",
}

// Durations passed to the functions: config.go's defaults, written out so a
// deployment shows what it runs with.
const (
	IdempotencyTTL = "720h"
	DeliveryLease  = "2m"
	EvidenceMargin = "5m"
	// SweepEveryMinutes is the sweeper's schedule; SweepEvery the same
	// for its environment.
	SweepEveryMinutes = 1
	SweepEvery        = "1m"
	CounterLag        = "2m"
	SweepStuckAfter   = "10m"
	EvidenceWindow    = "15m"
	// ModelTimeout bounds one model call (config.DefaultModelTimeout); the
	// llm function's timeout is sized from it (R-STAGE-9).
	ModelTimeout = "5m"
	// DefaultMaxSendRate is SES's maximum send rate for a new production
	// account (config.DefaultMaxSendRate); context maxSendRate sets the
	// account's own quota.
	DefaultMaxSendRate = "14"
)

// UnsubscribeKeyLength is the generated unsubscribe key's length in
// characters (alphanumeric, about 5.95 bits each: 380 bits), twice config's
// 32-byte minimum.
const UnsubscribeKeyLength = 64

// QueueEnv is config.QueueEnv: CRITICIZER_<STAGE>_QUEUE_URL.
func QueueEnv(q string) string { return "CRITICIZER_" + strings.ToUpper(q) + "_QUEUE_URL" }

// DLQEnv is config.DLQEnv: CRITICIZER_<STAGE>_DLQ_URL.
func DLQEnv(q string) string { return "CRITICIZER_" + strings.ToUpper(q) + "_DLQ_URL" }

// Queue names (the pipeline's stages, then the SES feedback queue).
const (
	QFetch    = "fetch"
	QLLM      = "llm"
	QNotify   = "notify"
	QFeedback = "feedback"
)

// Function names: each is functions/<name> in the root module and
// build/<name>/bootstrap after `make build`.
const (
	FnIntake   = "intake"
	FnFetch    = "fetch"
	FnLLM      = "llm"
	FnNotify   = "notify"
	FnFeedback = "feedback"
	FnSweeper  = "sweeper"
)

// Stable logical ids, shared with template.yaml so the two templates can be
// compared (and so refactoring the CDK code never replaces a table or queue).
const (
	IDJobsTable       = "JobsTable"
	IDDeliveriesTable = "DeliveriesTable"
	IDPayloadBucket   = "PayloadBucket"
	IDWebhookSecret   = "WebhookSecret"
	// IDFetchSecret holds fetch's settings that are secrets (source API
	// tokens, Gerrit credentials, the reviewer directory); IDCriticSecret
	// llm's (the OpenAI-compatible API key). Each function reads only its
	// own, by ARN, at start.
	IDFetchSecret  = "FetchSecret"
	IDCriticSecret = "CriticSecret"
	// IDUnsubscribeSecret holds the unsubscribe token signing key, shared by
	// intake (verifies /unsubscribe/{token}) and notify (mints the links).
	IDUnsubscribeSecret = "UnsubscribeSecret"
	IDConfigurationSet  = "ConfigurationSet"
	IDSESEventsTopic    = "SesEventsTopic"
	IDHTTPAPI           = "HttpApi"
)

// FunctionID is a function's logical id, e.g. IntakeFunction.
func FunctionID(fn string) string { return title(fn) + "Function" }

// QueueID is a queue's logical id, e.g. FetchQueue.
func QueueID(q string) string { return title(q) + "Queue" }

// DLQID is a dead-letter queue's logical id, e.g. FetchDLQ.
func DLQID(q string) string { return title(q) + "DLQ" }

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Key prefixes of the jobs table items fetch and llm may touch (the
// store's keys: JOB#<job id>, SRC#<job id>; and for fetch, deciding who
// reviews, ROSTER#<changelist>, DIR#<source>#<username>, UNKNOWN#<source>;
// and for llm, the model-run budgets' windows, BUDGET#<budget>#<key>#<start>).
const (
	JobItemPrefix   = "JOB#"
	SourceRefPrefix = "SRC#"
	RosterPrefix    = "ROSTER#"
	DirectoryPrefix = "DIR#"
	UnknownPrefix   = "UNKNOWN#"
	BudgetPrefix    = "BUDGET#"
)

// The sparse indexes the sweeps read (internal/store/index.go; a store
// test checks these names against the store's).
const (
	IndexLiveJobs       = "LiveJobs"
	IndexLiveDeliveries = "LiveDeliveries"
	AttrSweep           = "sweep"
	// IndexDirectory lists the reviewer directory's entries (sparse: only
	// entries carry its keys), for the admin API and the CLI.
	IndexDirectory    = "Directory"
	AttrDirectory     = "directory"
	AttrDirectoryUser = "directory_user"
)
