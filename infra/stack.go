package main

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Sizing. Every function is provided.al2023 on arm64 (`make build` builds
// GOARCH=arm64), handler "bootstrap".
type fnSpec struct {
	Name    string
	Memory  float64 // MB
	Timeout float64 // seconds
	// Queue is the queue it consumes (SQS event source), if any.
	Queue string
	// BatchSize is the SQS event source's batch size; 0 means BatchSize.
	BatchSize float64
	// MaxConcurrency caps the event source mapping's pollers (>= 2); a
	// reservation, when configured, is never below it, so the mapping
	// never outruns the reservation, whose throttles would count as
	// receives towards the redrive limit.
	MaxConcurrency float64
	Description    string
}

var functionSpecs = []fnSpec{
	{Name: FnIntake, Memory: 256, Timeout: 10, Description: "HTTP API: webhook intake, job status, unsubscribe, admin"},
	{Name: FnFetch, Memory: 256, Timeout: 60, Queue: QFetch, Description: "fetch stage: changelist diff into the payload bucket"},
	// llm: one message per invocation, 6 minutes: the model's worst case
	// (ModelTimeout, 5 min) and the stage's work around it fit with room to
	// spare, so a slow model never loses its batch (docs/rules.md
	// R-STAGE-9, TestDeadlineArithmetic). Its event source polls with at
	// most LLMMaxConcurrency invocations: a burst of reviews must not take
	// the account's concurrency or the model's token quota (R-LIMIT-4).
	{Name: FnLLM, Memory: 512, Timeout: 360, BatchSize: 1, Queue: QLLM, MaxConcurrency: LLMMaxConcurrency,
		Description: "llm stage: the critic reviews the diff"},
	// notify's event source polls with at most 5 concurrent invocations
	// (no account quota needed); a reservation of the same size is opt-in
	// (context notifyReservedConcurrency), because reserving fails the
	// deploy on accounts still at the default concurrency quota of 10.
	{Name: FnNotify, Memory: 256, Timeout: 60, Queue: QNotify, MaxConcurrency: 5, Description: "notify stage: the outbox sends the critique with SES v2"},
	// feedback's timeout sets its queue's visibility timeout (6×, +1 s):
	// the evidence margin must exceed it, so that a batch whose invocation
	// died before it registered its events is seen again before the
	// watermark can pass them (docs/architecture.md, "The remaining window";
	// TestEvidenceMarginExceedsFeedbackVisibility).
	{Name: FnFeedback, Memory: 128, Timeout: FeedbackTimeoutSeconds, Queue: QFeedback, Description: "SES event publishing (SNS to SQS) into delivery rows"},
	{Name: FnSweeper, Memory: 256, Timeout: 120, Description: "every minute: stuck jobs, stuck sends, sends without evidence, the feedback queue drained"},
}

// LLMMaxConcurrency caps llm's event source: at most 3 model reviews at a
// time. The arithmetic (docs/deploy.md, "Quotas to request"):
//   - Lambda: an account starts with a concurrency quota of 10 (new
//     accounts' reduced quota). notify's 5 and llm's 3 leave 2 for intake,
//     fetch, feedback and the sweeper, so a burst of reviews cannot take
//     the whole account and answer webhooks with throttles.
//   - Bedrock: one review is one model call of at most about 60,000 tokens
//     (the 192 KiB diff budget at about 3.5 bytes a token, the prompt and
//     instructions, and 1,400 output tokens at 5 findings; a typical
//     review is about 6,000, docs/benchmarks.md 7c). 3 calls at a time,
//     each taking 30 s or more, spend at most 3 × 60,000 × 2 = 360,000
//     tokens a minute; 3 typical reviews a minute about 18,000.
//
// A throttled model call is retried by the stage runner; a throttled
// poller only waits, so a lower cap delays reviews and never loses one.
const LLMMaxConcurrency = 3

// Queue settings.
const (
	// MaxReceiveCount is the redrive policy's limit: the stage runner
	// dead-letters by itself at attempt 5 with an envelope, so the redrive
	// is the crash-loop safety net (internal/devstack.MaxReceiveCount).
	MaxReceiveCount = 10
	BatchSize       = 10
	// BatchWindowSeconds is MaximumBatchingWindowInSeconds.
	BatchWindowSeconds = 1
	// VisibilityFactor: AWS's guidance for an SQS-triggered function, the
	// queue's visibility timeout at least 6x the function timeout (plus the
	// batch window).
	VisibilityFactor   = 6
	QueueRetentionDays = 4
	DLQRetentionDays   = 14
	// FeedbackTimeoutSeconds is the feedback function's timeout, which
	// sets its queue's visibility timeout and so the drain rule's horizon
	// (EvidenceLagAlarmSeconds).
	FeedbackTimeoutSeconds = 10
	// Payload objects expire after this many days.
	PayloadExpiryDays = 30
	// QuarantinePrefix holds the feedback records that could never be
	// evidence (internal/feedback.QuarantinePrefix), kept
	// QuarantineExpiryDays (feedback.QuarantineExpiryDays).
	QuarantinePrefix     = "quarantine/"
	QuarantineExpiryDays = 14
	// HTTP API default-stage throttling, which applies to each route on
	// its own: every source's webhooks have their own route, so a flood of
	// junk at one source cannot push another's deliveries into 429s.
	ThrottleRate  = 50
	ThrottleBurst = 100
)

// Sources are the webhook sources (job.Sources in internal/job/source.go;
// TestSourcesMatchRoot checks the two are equal), one route each
// (POST /webhooks/<source>).
var Sources = []string{"generic", "github", "gitlab", "gerrit"}

// Route is one HTTP API route, all served by intake.
type Route struct {
	Method, Path string
	// IAM means the route requires SigV4 (operators' credentials).
	IAM bool
}

// Routes are the HTTP API's routes: api.Routes() in the root module
// (internal/api/routes.go), which this module does not import;
// TestRoutesDeployed holds the two, this stack's routes and
// template.yaml's to the same list (R-DEPLOY-1). The admin routes need
// IAM authorization and, inside intake, the admin API key (in X-Api-Key:
// SigV4 takes the Authorization header); without CRITICIZER_ADMIN_API_KEY
// in intake's secret they answer 404. The rest authenticate inside the
// function (webhook HMAC, signed unsubscribe and vote tokens) or are public by
// design (health, job status with masked recipients).
var Routes = append(webhookRoutes(), []Route{
	{Method: "GET", Path: "/jobs/{id}"},
	{Method: "GET", Path: "/healthz"},
	{Method: "GET", Path: "/unsubscribe/{token}"},
	// Link checkers and mail scanners probe links with HEAD.
	{Method: "HEAD", Path: "/unsubscribe/{token}"},
	{Method: "POST", Path: "/unsubscribe/{token}"},
	// A reader's vote on a finding (R-VOTE-1): GET shows the button that
	// POSTs; the signed token authenticates.
	{Method: "GET", Path: "/vote/{token}"},
	{Method: "HEAD", Path: "/vote/{token}"},
	{Method: "POST", Path: "/vote/{token}"},
	// A reader's preference page (R-PREF-2): GET shows it, POST saves;
	// the signed, expiring token authenticates.
	{Method: "GET", Path: "/preferences/{token}"},
	{Method: "HEAD", Path: "/preferences/{token}"},
	{Method: "POST", Path: "/preferences/{token}"},
	{Method: "POST", Path: "/admin/rerun", IAM: true},
	{Method: "GET", Path: "/admin/previews", IAM: true},
	{Method: "GET", Path: "/admin/previews/{template+}", IAM: true}, // names hold "/"
	// The reviewer directory (R-REVIEWERS-4).
	{Method: "GET", Path: "/admin/directory", IAM: true},
	{Method: "PUT", Path: "/admin/directory/{source}/{username}", IAM: true},
	{Method: "DELETE", Path: "/admin/directory/{source}/{username}", IAM: true},
}...)

func webhookRoutes() []Route {
	var rs []Route
	for _, src := range Sources {
		rs = append(rs, Route{Method: "POST", Path: "/webhooks/" + src})
	}
	return rs
}

// Stack is the built stack with handles the monitoring and the tests use.
type Stack struct {
	Stack      awscdk.Stack
	Config     Config
	Functions  map[string]awslambda.Function
	Queues     map[string]awssqs.Queue
	DLQs       map[string]awssqs.Queue
	Jobs       awsdynamodb.Table
	Deliveries awsdynamodb.Table
	Bucket     awss3.Bucket
	Secret     awssecretsmanager.Secret
	// UnsubscribeSecret is the unsubscribe token signing key, read by
	// intake and notify only.
	UnsubscribeSecret awssecretsmanager.Secret
	// StageSecrets are the fetch and llm secrets, by logical id.
	StageSecrets map[string]awssecretsmanager.Secret
	ConfigSet    awsses.ConfigurationSet
	SESEvents    awssns.Topic
	AlarmTopic   awssns.Topic
	API          awsapigatewayv2.HttpApi
	APIStage     awsapigatewayv2.HttpStage
	// RouteConstructs maps each of Routes to its construct.
	RouteConstructs map[Route]awsapigatewayv2.HttpRoute
	TopicKey        awskms.Key
}

// NewStack builds the whole deployment.
func NewStack(scope constructs.Construct, id string, props *awscdk.StackProps, cfg Config) *Stack {
	st := awscdk.NewStack(scope, jsii.String(id), props)
	s := &Stack{Stack: st, Config: cfg, Functions: map[string]awslambda.Function{}, StageSecrets: map[string]awssecretsmanager.Secret{},
		Queues: map[string]awssqs.Queue{}, DLQs: map[string]awssqs.Queue{}, RouteConstructs: map[Route]awsapigatewayv2.HttpRoute{}}
	if cfg.MailFrom == DefaultMailFrom {
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("criticizer:mailFrom"),
			jsii.String("mailFrom is the placeholder "+DefaultMailFrom+"; deploy with -c mailFrom='Name <address@your-verified-domain>'"))
	}

	s.data()
	s.queues()
	s.mail()
	s.secret()
	s.functions()
	s.permissions()
	s.api()
	s.schedule()
	s.monitoring()
	s.outputs()
	applyNagSuppressions(s)
	return s
}

func (s *Stack) data() {
	s.Jobs = awsdynamodb.NewTable(s.Stack, jsii.String(IDJobsTable), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true)},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	// The sparse indexes the sweeps read (the store's index.go): unfinished
	// jobs by updated_at, and rows that may need a hand; keys only, so a
	// live item's writes are not billed again for a copy of it.
	s.Jobs.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{IndexName: jsii.String(IndexLiveJobs),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(AttrSweep), Type: awsdynamodb.AttributeType_STRING},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String("updated_at"), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY})
	// The reviewer directory's entries, by source (the store's
	// directory.go), which the admin API and the CLI list.
	s.Jobs.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{IndexName: jsii.String(IndexDirectory),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(AttrDirectory), Type: awsdynamodb.AttributeType_STRING},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(AttrDirectoryUser), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_ALL})
	overrideID(s.Jobs, IDJobsTable)

	s.Deliveries = awsdynamodb.NewTable(s.Stack, jsii.String(IDDeliveriesTable), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("delivery_id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true)},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	s.Deliveries.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{IndexName: jsii.String(IndexLiveDeliveries),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(AttrSweep), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY})
	overrideID(s.Deliveries, IDDeliveriesTable)

	s.Bucket = awss3.NewBucket(s.Stack, jsii.String(IDPayloadBucket), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(false),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-payloads"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(PayloadExpiryDays)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}, {
			// What the feedback function quarantined (R-EVIDENCE-10): it
			// may hold addresses, so it goes sooner than the payloads.
			Id:         jsii.String("expire-quarantine"),
			Prefix:     jsii.String(QuarantinePrefix),
			Expiration: awscdk.Duration_Days(jsii.Number(QuarantineExpiryDays)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	overrideID(s.Bucket, IDPayloadBucket)
}

// queues makes one queue per consumer with its DLQ. Queue names derive from
// the stack name so each DLQ's redrive allow policy can name its only
// source queue without a reference cycle (the source's redrive policy
// already references the DLQ).
func (s *Stack) queues() {
	for _, f := range functionSpecs {
		if f.Queue == "" {
			continue
		}
		name := func(suffix string) *string {
			return awscdk.Fn_Join(jsii.String(""), &[]*string{awscdk.Aws_STACK_NAME(), jsii.String("-" + f.Queue + suffix)})
		}
		sourceARN := s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("sqs"), Resource: name("")})
		dlq := awssqs.NewQueue(s.Stack, jsii.String(DLQID(f.Queue)), &awssqs.QueueProps{
			QueueName:       name("-dlq"),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(DLQRetentionDays)),
			// Deleting the stack keeps the queue and what it holds (work in
			// flight, dead letters awaiting triage).
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
			RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{
				RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
				SourceQueues:      &[]awssqs.IQueue{awssqs.Queue_FromQueueArn(s.Stack, jsii.String(DLQID(f.Queue)+"Source"), sourceARN)},
			},
		})
		overrideID(dlq, DLQID(f.Queue))
		q := awssqs.NewQueue(s.Stack, jsii.String(QueueID(f.Queue)), &awssqs.QueueProps{
			QueueName:         name(""),
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(VisibilityFactor*f.Timeout + BatchWindowSeconds)),
			RetentionPeriod:   awscdk.Duration_Days(jsii.Number(QueueRetentionDays)),
			// Deleting the stack keeps the queue and what it holds (work in
			// flight, dead letters awaiting triage).
			RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
			DeadLetterQueue: &awssqs.DeadLetterQueue{MaxReceiveCount: jsii.Number(MaxReceiveCount), Queue: dlq},
		})
		overrideID(q, QueueID(f.Queue))
		s.Queues[f.Queue], s.DLQs[f.Queue] = q, dlq
	}
}

// mail is SES v2's configuration set, publishing every sending event to an
// SNS topic that feeds the feedback queue. The topic is encrypted with a
// customer managed key because SES and CloudWatch can only publish to an
// encrypted topic whose key policy lets them (AWS managed keys cannot).
func (s *Stack) mail() {
	s.TopicKey = awskms.NewKey(s.Stack, jsii.String("TopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Criticizer SNS topics (SES events carry recipient addresses)"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	s.SESEvents = awssns.NewTopic(s.Stack, jsii.String(IDSESEventsTopic), &awssns.TopicProps{
		DisplayName: jsii.String("Criticizer SES events"),
		MasterKey:   s.TopicKey,
		EnforceSSL:  jsii.Bool(true),
	})
	overrideID(s.SESEvents, IDSESEventsTopic)

	s.ConfigSet = awsses.NewConfigurationSet(s.Stack, jsii.String(IDConfigurationSet), &awsses.ConfigurationSetProps{
		ReputationMetrics: jsii.Bool(true),
		SendingEnabled:    jsii.Bool(true),
	})
	overrideID(s.ConfigSet, IDConfigurationSet)
	// The publishers to the encrypted topics may use the key only for this
	// account's own configuration set and alarms (aws:SourceAccount and
	// aws:SourceArn): no other account's SES or CloudWatch can make this
	// key encrypt for it (a confused deputy).
	s.TopicKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("SesPublishesThisConfigurationSetsEvents"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("ses.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:GenerateDataKey*", "kms:Decrypt"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			"ArnLike": map[string]any{"aws:SourceArn": s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ses"),
				Resource: jsii.String("configuration-set"), ResourceName: s.ConfigSet.ConfigurationSetName()})},
		},
	}), jsii.Bool(false))
	s.TopicKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchPublishesThisAccountsAlarms"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:GenerateDataKey*", "kms:Decrypt"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			"ArnLike":      map[string]any{"aws:SourceArn": alarmARNs(s.Stack)},
		},
	}), jsii.Bool(false))
	s.ConfigSet.AddEventDestination(jsii.String("ToSns"), &awsses.ConfigurationSetEventDestinationOptions{
		Destination: awsses.EventDestination_SnsTopic(s.SESEvents),
		Events: &[]awsses.EmailSendingEvent{
			awsses.EmailSendingEvent_SEND, awsses.EmailSendingEvent_DELIVERY, awsses.EmailSendingEvent_BOUNCE,
			awsses.EmailSendingEvent_COMPLAINT, awsses.EmailSendingEvent_REJECT,
			awsses.EmailSendingEvent_RENDERING_FAILURE, awsses.EmailSendingEvent_DELIVERY_DELAY,
		},
	})
	s.SESEvents.AddSubscription(awssnssubscriptions.NewSqsSubscription(s.Queues[QFeedback],
		&awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true)}))
}

func (s *Stack) secret() {
	s.Secret = awssecretsmanager.NewSecret(s.Stack, jsii.String(IDWebhookSecret), &awssecretsmanager.SecretProps{
		Description: jsii.String("Criticizer intake secrets: a JSON object of CRITICIZER_* setting names to values; " +
			"CRITICIZER_WEBHOOK_SECRET is generated, add the other sources' webhook secrets and CRITICIZER_ADMIN_API_KEY as keys"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String("{}"),
			GenerateStringKey:    jsii.String(EnvWebhookSecret),
			PasswordLength:       jsii.Number(48),
			ExcludePunctuation:   jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	overrideID(s.Secret, IDWebhookSecret)
	// The unsubscribe signing key: generated, 64 alphanumeric characters
	// (well over config's 32-byte minimum; no punctuation, so it is safe in
	// JSON, shells and HMAC tooling alike). Its own secret, not a key of the
	// webhook secret, so notify can read it without reading intake's
	// webhook credentials.
	s.UnsubscribeSecret = awssecretsmanager.NewSecret(s.Stack, jsii.String(IDUnsubscribeSecret), &awssecretsmanager.SecretProps{
		Description: jsii.String("Criticizer unsubscribe token signing key (CRITICIZER_UNSUBSCRIBE_KEY), read by intake and notify; " +
			"when changing it, keep the old one here as CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS or the links of emails already sent stop working"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String("{}"),
			GenerateStringKey:    jsii.String(EnvUnsubscribeKey),
			PasswordLength:       jsii.Number(UnsubscribeKeyLength),
			ExcludePunctuation:   jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	overrideID(s.UnsubscribeSecret, IDUnsubscribeSecret)
	// The fetch and llm secrets start as an empty JSON object: the operator
	// adds the keys a deployment needs (put-secret-value). "{}" holds
	// nothing secret.
	for id, desc := range map[string]string{
		IDFetchSecret:  "Criticizer fetch secrets: a JSON object, e.g. CRITICIZER_GITHUB_TOKEN or CRITICIZER_GITHUB_APP_ID/PRIVATE_KEY, CRITICIZER_GITLAB_TOKEN, CRITICIZER_GERRIT_USERNAME/PASSWORD, CRITICIZER_REVIEWER_DIRECTORY",
		IDCriticSecret: "Criticizer llm secrets: a JSON object, e.g. CRITICIZER_OPENAI_API_KEY",
	} {
		sec := awssecretsmanager.NewSecret(s.Stack, jsii.String(id), &awssecretsmanager.SecretProps{
			Description:       jsii.String(desc),
			SecretStringValue: awscdk.SecretValue_UnsafePlainText(jsii.String("{}")),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
		overrideID(sec, id)
		s.StageSecrets[id] = sec
	}
}

// Environment: each function gets only the names it reads.
func (s *Stack) environment(fn string) map[string]*string {
	jobs, deliveries, bucket := s.Jobs.TableName(), s.Deliveries.TableName(), s.Bucket.BucketName()
	qURL := func(q string) *string { return s.Queues[q].QueueUrl() }
	dURL := func(q string) *string { return s.DLQs[q].QueueUrl() }
	env := map[string]*string{EnvLogLevel: jsii.String(s.Config.LogLevel)}
	set := func(kv ...any) {
		for i := 0; i < len(kv); i += 2 {
			env[kv[i].(string)] = kv[i+1].(*string)
		}
	}
	switch fn {
	case FnIntake:
		// Deliveries: read-only, GET /jobs/{id} shows each recipient's row.
		// Two secrets: its webhook credentials, and the unsubscribe key it
		// verifies /unsubscribe/{token} with (config reads a comma-separated
		// list of ARNs).
		set(EnvJobsTable, jobs, EnvDeliveriesTable, deliveries, EnvPayloadBucket, bucket,
			QueueEnv(QFetch), qURL(QFetch),
			EnvSecretsARN, awscdk.Fn_Join(jsii.String(","), &[]*string{s.Secret.SecretArn(), s.UnsubscribeSecret.SecretArn()}),
			EnvIdempotencyTTL, jsii.String(IdempotencyTTL))
	case FnFetch:
		set(EnvJobsTable, jobs, EnvPayloadBucket, bucket,
			QueueEnv(QFetch), qURL(QFetch), DLQEnv(QFetch), dURL(QFetch), QueueEnv(QLLM), qURL(QLLM),
			EnvSecretsARN, s.StageSecrets[IDFetchSecret].SecretArn())
	case FnLLM:
		set(EnvJobsTable, jobs, EnvPayloadBucket, bucket,
			QueueEnv(QLLM), qURL(QLLM), DLQEnv(QLLM), dURL(QLLM), QueueEnv(QNotify), qURL(QNotify),
			EnvSecretsARN, s.StageSecrets[IDCriticSecret].SecretArn())
		set(EnvCritic, jsii.String(s.Config.Critic))
		for env, v := range map[string]string{"CRITICIZER_REVIEW_INSTRUCTIONS": s.Config.ReviewInstructions,
			"CRITICIZER_REVIEW_INSTRUCTIONS_BY_REPO": s.Config.ReviewInstructionsByRepo, "CRITICIZER_LLM_MAX_FINDINGS": s.Config.LLMMaxFindings} {
			if v != "" {
				set(env, jsii.String(v))
			}
		}
		switch s.Config.Critic {
		case "bedrock":
			set(EnvBedrockModelID, jsii.String(s.Config.CriticModel))
		case "openai":
			set(EnvOpenAIModel, jsii.String(s.Config.CriticModel))
			if s.Config.OpenAIBase != "" {
				set(EnvOpenAIBaseURL, jsii.String(s.Config.OpenAIBase))
			}
		}
	case FnNotify:
		// The unsubscribe key mints the links; CRITICIZER_PUBLIC_URL, the
		// API's endpoint they point at, is added in api() once the API
		// exists.
		set(EnvJobsTable, jobs, EnvDeliveriesTable, deliveries,
			QueueEnv(QNotify), qURL(QNotify), DLQEnv(QNotify), dURL(QNotify),
			EnvSecretsARN, s.UnsubscribeSecret.SecretArn(),
			EnvMailFrom, jsii.String(s.Config.MailFrom), EnvConfigurationSet, s.ConfigSet.ConfigurationSetName(),
			EnvDeliveryLease, jsii.String(DeliveryLease), EnvEvidenceMargin, jsii.String(EvidenceMargin),
			EnvMaxSendRate, jsii.String(s.Config.MaxSendRate), EnvUncertainSend, jsii.String(s.Config.UncertainSend))
	case FnFeedback:
		// Records SES events on delivery rows; a record it cannot store is a
		// batch item failure, and the redrive policy dead-letters it, so it
		// needs no DLQ URL. A permanent bounce or a complaint also
		// suppresses the address: a SUPP#<id> item in the jobs table. A
		// transient bounce sends the delivery again: the job reopens at
		// notify and a notify message is enqueued, hence the notify
		// queue's URL (config.QueueEnv(job.StageNotify)).
		// It measures each Send event against the publish bound
		// (R-EVIDENCE-7), and keeps a copy of a record that can never be
		// evidence in the payload bucket before it acknowledges it
		// (R-EVIDENCE-10).
		set(EnvDeliveriesTable, deliveries, EnvJobsTable, jobs, QueueEnv(QNotify), qURL(QNotify),
			EnvEvidenceMargin, jsii.String(EvidenceMargin), EnvPayloadBucket, bucket)
	case FnSweeper:
		// Re-enqueues a stuck job at its current stage (any of the three)
		// and hands stuck sends to notify; reads the feedback queue's and
		// its DLQ's counters to move the evidence path's drain time
		// (internal/drain), the configuration set's.
		set(EnvJobsTable, jobs, EnvDeliveriesTable, deliveries,
			QueueEnv(QFetch), qURL(QFetch), QueueEnv(QLLM), qURL(QLLM), QueueEnv(QNotify), qURL(QNotify),
			EnvSweepStuckAfter, jsii.String(SweepStuckAfter), EnvEvidenceWindow, jsii.String(EvidenceWindow),
			EnvEvidenceMargin, jsii.String(EvidenceMargin), EnvConfigurationSet, s.ConfigSet.ConfigurationSetName(),
			EnvFeedbackQueueURL, qURL(QFeedback), EnvFeedbackDLQURL, dURL(QFeedback), EnvCounterLag, jsii.String(CounterLag),
			EnvSweepEvery, jsii.String(SweepEvery))
	default:
		panic(fmt.Sprintf("no environment for function %q", fn))
	}
	if fn == FnFetch || fn == FnLLM || fn == FnNotify {
		// The stage runner dead-letters on the last receive its queue's
		// redrive policy allows (R-STAGE-10).
		set(EnvMaxReceiveCount, jsii.String(strconv.Itoa(MaxReceiveCount)))
	}
	if fn == FnLLM {
		set(EnvModelTimeout, jsii.String(ModelTimeout))
	}
	if (fn == FnIntake || fn == FnNotify) && s.Config.AllowedRecipientDomains != "" {
		// R-RECIPIENT-1: notify skips other domains; intake's dry run says so.
		set(EnvAllowedRecipientDomains, jsii.String(s.Config.AllowedRecipientDomains))
	}
	return env
}

// batchSize is the function's SQS batch size.
func (f fnSpec) batchSize() float64 {
	if f.BatchSize > 0 {
		return f.BatchSize
	}
	return BatchSize
}

func (s *Stack) functions() {
	for _, f := range functionSpecs {
		logs := awslogs.NewLogGroup(s.Stack, jsii.String(FunctionID(f.Name)+"Logs"), &awslogs.LogGroupProps{
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
		// Its own role without AWSLambdaBasicExecutionRole (logs:* on any
		// log group): only CreateLogStream/PutLogEvents on its log group.
		role := awsiam.NewRole(s.Stack, jsii.String(FunctionID(f.Name)+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("Criticizer " + f.Name + " function"),
		})
		logs.GrantWrite(role)
		props := &awslambda.FunctionProps{
			Role:          role,
			Description:   jsii.String("Criticizer " + f.Description),
			Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:  awslambda.Architecture_ARM_64(),
			Handler:       jsii.String("bootstrap"),
			Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(s.Config.AssetDir, f.Name)), nil),
			MemorySize:    jsii.Number(f.Memory),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(f.Timeout)),
			LoggingFormat: awslambda.LoggingFormat_JSON,
			LogGroup:      logs,
			Environment:   &map[string]*string{},
		}
		for k, v := range s.environment(f.Name) {
			(*props.Environment)[k] = v
		}
		if f.Name == FnNotify && s.Config.NotifyReserved > 0 {
			props.ReservedConcurrentExecutions = jsii.Number(s.Config.NotifyReserved)
		}
		if f.Name == FnSweeper {
			// Invoked asynchronously by the schedule: the next run is the retry.
			props.RetryAttempts = jsii.Number(0)
		}
		fn := awslambda.NewFunction(s.Stack, jsii.String(FunctionID(f.Name)), props)
		overrideID(fn, FunctionID(f.Name))
		if f.Queue != "" {
			es := &awslambdaeventsources.SqsEventSourceProps{
				BatchSize:               jsii.Number(f.batchSize()),
				MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(BatchWindowSeconds)),
				ReportBatchItemFailures: jsii.Bool(true),
			}
			if f.MaxConcurrency > 0 {
				es.MaxConcurrency = jsii.Number(f.MaxConcurrency)
			}
			fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues[f.Queue], es))
		}
		s.Functions[f.Name] = fn
	}
}

// accessLog implements awsapigatewayv2.IAccessLogSettings.
type accessLog struct {
	dest   awsapigatewayv2.IAccessLogDestination
	format awsapigateway.AccessLogFormat
}

func (a *accessLog) Destination() awsapigatewayv2.IAccessLogDestination { return a.dest }
func (a *accessLog) Format() awsapigateway.AccessLogFormat              { return a.format }

// accessLogFormat is one JSON line per request. It logs the route key, not
// the raw path: paths carry unsubscribe tokens.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"requestTime":"$context.requestTime","routeKey":"$context.routeKey","status":"$context.status",` +
	`"protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"latency":"$context.responseLatency","integrationLatency":"$context.integrationLatency",` +
	`"integrationError":"$context.integrationErrorMessage","userArn":"$context.identity.userArn"}`

func (s *Stack) api() {
	s.API = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String(IDHTTPAPI), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Criticizer webhooks, job status, unsubscribe, admin"),
		CreateDefaultStage: jsii.Bool(false),
	})
	overrideID(s.API, IDHTTPAPI)
	logs := awslogs.NewLogGroup(s.Stack, jsii.String("HttpApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	s.APIStage = s.API.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle:   &awsapigatewayv2.ThrottleSettings{RateLimit: jsii.Number(ThrottleRate), BurstLimit: jsii.Number(ThrottleBurst)},
		AccessLogSettings: &accessLog{
			dest:   awsapigatewayv2.NewLogGroupLogDestination(logs),
			format: awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
		},
	})
	// notify builds unsubscribe links under the API's endpoint. The API
	// integrates intake only, so notify's reference to it makes no cycle.
	s.Functions[FnNotify].AddEnvironment(jsii.String(EnvPublicURL), s.API.ApiEndpoint(), nil)
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Intake"), s.Functions[FnIntake], nil)
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	for _, r := range Routes {
		o := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.Method)},
			Integration: integration,
		}
		if r.IAM {
			o.Authorizer = iam
		}
		s.RouteConstructs[r] = (*s.API.AddRoutes(o))[0]
	}
}

// schedule runs the sweeper every minute: besides its sweeps, each run is
// a chance to find the feedback queue drained (internal/drain), which is
// when a send whose answer was lost can be settled; a minute keeps that
// chance frequent for the cost of 1,440 short invocations a day.
func (s *Stack) schedule() {
	awsevents.NewRule(s.Stack, jsii.String("SweeperSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Criticizer sweeper, every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(SweepEveryMinutes))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnSweeper],
			&awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
}

func (s *Stack) outputs() {
	out := func(id string, v *string, desc string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v, Description: jsii.String(desc)})
	}
	out("ApiUrl", s.API.ApiEndpoint(), "HTTP API base URL (POST /webhooks/<generic|github|gitlab|gerrit>)")
	out("WebhookSecretArn", s.Secret.SecretArn(), "intake's secrets (JSON): aws secretsmanager get-secret-value --secret-id <arn>")
	out("UnsubscribeSecretArn", s.UnsubscribeSecret.SecretArn(), "the unsubscribe link signing key (intake and notify); changing it invalidates links in emails already sent")
	out("FetchSecretArn", s.StageSecrets[IDFetchSecret].SecretArn(), "fetch's secrets (JSON): source API tokens, Gerrit credentials, the reviewer directory")
	out("CriticSecretArn", s.StageSecrets[IDCriticSecret].SecretArn(), "llm's secrets (JSON): CRITICIZER_OPENAI_API_KEY")
	out("JobsTableName", s.Jobs.TableName(), "jobs table")
	out("DeliveriesTableName", s.Deliveries.TableName(), "deliveries table")
	out("PayloadBucketName", s.Bucket.BucketName(), "payload bucket")
	out("ConfigurationSetName", s.ConfigSet.ConfigurationSetName(), "SES configuration set")
	out("AlarmTopicArn", s.AlarmTopic.TopicArn(), "subscribe operators to alarms here")
	for _, f := range functionSpecs {
		if f.Queue == "" {
			continue
		}
		out(title(f.Queue)+"QueueUrl", s.Queues[f.Queue].QueueUrl(), f.Queue+" queue")
		out(title(f.Queue)+"DlqUrl", s.DLQs[f.Queue].QueueUrl(), f.Queue+" dead-letter queue")
		// ARNs for aws sqs start-message-move-task (docs/operations.md, "Dead letters").
		out(title(f.Queue)+"QueueArn", s.Queues[f.Queue].QueueArn(), f.Queue+" queue ARN")
		out(title(f.Queue)+"DlqArn", s.DLQs[f.Queue].QueueArn(), f.Queue+" dead-letter queue ARN")
	}
}

// overrideID pins a construct's CloudFormation logical id.
func overrideID(c constructs.IConstruct, id string) {
	c.Node().DefaultChild().(awscdk.CfnElement).OverrideLogicalId(jsii.String(id))
}
