package deploy

import (
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Describe is the deployment.
func Describe() Deployment {
	params := parameters()
	d := Deployment{
		Parameters: params,
		Conditions: conditions(params),
		Rules: []Rule{{Name: "ModelForCritic", When: Condition("IsModel"), Assert: Not(Equals(Ref("CriticModel"), Lit(""))),
			Message: "Critic bedrock or openai needs CriticModel"}},
		Functions: functions(),
		Tables: []Table{
			{ID: IDJobsTable, Schema: schema.Jobs(), Note: "Jobs and every other item kind (internal/store/dynamo/schema), with the sparse index the sweeps read and the reviewer directory's."},
			{ID: IDDeliveriesTable, Schema: schema.Deliveries(), Note: "One row per recipient and review version, with the sparse index the sweeps read."},
		},
		Bucket: Bucket{ID: IDPayloadBucket, Expire: []Expiry{
			{Prefix: "diffs/", Days: PayloadExpiryDays, What: "diffs up to 1 MiB, content addressed"},
			{Prefix: QuarantinePrefix, Days: QuarantineExpiryDays, What: "feedback records that could never be SES events (R-EVIDENCE-10)"},
			{Prefix: InboundPrefix, Days: InboundExpiryDays, What: "replies SES received, read once by the reply function (R-REPLY-1)"},
		}},
		Inbound: Inbound{Param: "InboundDomain", Condition: "HasInboundDomain", RuleSet: "inbound", Rule: "replies",
			Topic: IDInboundTopic, Prefix: InboundPrefix, Queue: QReply},
		Secrets: []Secret{
			{ID: IDWebhookSecret, Generate: config.EnvWebhookSecret, Length: WebhookSecretLength,
				Description: "Criticizer intake secrets: a JSON object of CRITICIZER_* setting names to values; CRITICIZER_WEBHOOK_SECRET is generated, add the other sources' webhook secrets and CRITICIZER_ADMIN_API_KEY as keys",
				Note:        "intake's secrets, read by ARN at start: the generic source's signing secret is generated; add other sources' keys by hand.",
				Holds: []string{config.EnvWebhookSecret, config.EnvGitHubWebhookSecret, config.EnvGitLabWebhookToken, config.EnvGitLabSigningSecret,
					config.EnvGerritWebhookToken, config.EnvAdminAPIKey}},
			{ID: IDUnsubscribeSecret, Generate: config.EnvUnsubscribeKey, Length: UnsubscribeKeyLength,
				Description: "Criticizer unsubscribe token signing key (CRITICIZER_UNSUBSCRIBE_KEY), read by intake, notify and reply; when changing it, keep the old one here as CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS or the links of emails already sent stop working",
				Note:        "The unsubscribe key, generated; read by intake (verifies /unsubscribe/{token}), notify (mints links) and reply. Only the key: what notify alone reads is in the NotifySecret.",
				Holds:       []string{config.EnvUnsubscribeKey, config.EnvUnsubscribeKeyPrevious}},
			// notify's own: intake and reply, which read the key, never
			// read the channels' credentials (R-DEPLOY-5). Its ARN beside
			// the key's fits notify's 4 KB (R-LIMIT-1) as CloudFormation
			// names an unnamed secret (cfn.generatedSecretName).
			{ID: IDNotifySecret, Description: "Criticizer notify secrets: a JSON object, e.g. CRITICIZER_OUTBOUND_WEBHOOKS (the signed webhook destinations) and, with CodeHostStatus on, the code host's CRITICIZER_GITHUB_TOKEN or CRITICIZER_GITHUB_APP_ID/INSTALLATION_ID/PRIVATE_KEY, CRITICIZER_GITLAB_TOKEN, CRITICIZER_GERRIT_USERNAME/PASSWORD as in the FetchSecret",
				Note: "notify's secrets: an empty JSON object the operator fills (webhook destinations, the code host's credentials for the status on the change).",
				Holds: []string{config.EnvOutboundWebhooks,
					config.EnvGitHubToken, config.EnvGitHubAppID, config.EnvGitHubAppInstallationID, config.EnvGitHubAppPrivateKey,
					config.EnvGitLabToken, config.EnvGerritUsername, config.EnvGerritPassword}},
			{ID: IDFetchSecret, Description: "Criticizer fetch secrets: a JSON object, e.g. CRITICIZER_GITHUB_TOKEN or CRITICIZER_GITHUB_APP_ID/PRIVATE_KEY, CRITICIZER_GITLAB_TOKEN, CRITICIZER_GERRIT_USERNAME/PASSWORD, CRITICIZER_REVIEWER_DIRECTORY",
				Note: "fetch's secrets: an empty JSON object the operator fills (source API tokens, the reviewer directory).",
				Holds: []string{config.EnvGitHubToken, config.EnvGitHubAppID, config.EnvGitHubAppInstallationID, config.EnvGitHubAppPrivateKey,
					config.EnvGitLabToken, config.EnvGerritUsername, config.EnvGerritPassword, config.EnvReviewerDirectory}},
			{ID: IDCriticSecret, Description: "Criticizer llm secrets: a JSON object, e.g. CRITICIZER_OPENAI_API_KEY",
				Note:  "llm's secrets: an empty JSON object the operator fills (the OpenAI-compatible API key).",
				Holds: []string{config.EnvOpenAIAPIKey}},
		},
		API: API{Description: "Criticizer webhooks, job status, unsubscribe, admin", Routes: Routes(), Function: FnIntake,
			ThrottleRate: 50, ThrottleBurst: 100, AccessLogFormat: accessLogFormat},
	}
	for _, f := range d.Functions {
		if f.Queue == "" {
			continue
		}
		q := Queue{Name: f.Queue, VisibilitySeconds: VisibilityFactor*f.Timeout + BatchWindowSeconds}
		switch f.Queue {
		case QFeedback:
			q.FromSNS = IDSESEventsTopic
		case QReply:
			q.FromSNS = IDInboundTopic
		}
		d.Queues = append(d.Queues, q)
	}
	d.Alarms, d.Dashboard = monitoring(d)
	d.Outputs = outputs(d)
	return d
}

// accessLogFormat is one JSON line per request. It logs the route key, not
// the raw path: paths carry unsubscribe and vote tokens.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"requestTime":"$context.requestTime","routeKey":"$context.routeKey","status":"$context.status",` +
	`"protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"latency":"$context.responseLatency","integrationLatency":"$context.integrationLatency",` +
	`"integrationError":"$context.integrationErrorMessage","userArn":"$context.identity.userArn"}`

// DefaultMailFrom is config's default sender: deploying with it makes the
// CDK app warn.
const DefaultMailFrom = "Criticizer <criticizer@example.com>"

// The parameters' patterns. CloudFormation matches AllowedPattern
// against the whole value; each is anchored so Go's regexp does too.
const (
	// A sender: "Name <address>" or an address, printable ASCII, no angle
	// brackets but the address's (the SES grant takes the address from
	// between them). A name outside ASCII is written as an RFC 2047
	// encoded word.
	mailFromPattern = `^([ -;=?-~]*<[!-;=?-~]+@[!-;=?-~]+>|[!-;=?-~]+@[!-;=?-~]+)$`
	// A Bedrock model id or cross-region inference profile id, or an
	// OpenAI model name.
	modelPattern = `^$|^[a-z0-9-]+\.[A-Za-z0-9._:-]+$|^[A-Za-z0-9._:-]+$`
)

func parameters() []Param {
	all := []string{FnIntake, FnFetch, FnLLM, FnNotify, FnFeedback, FnSweeper, FnReply}
	return []Param{
		{Name: "MailFrom", Default: DefaultMailFrom, MaxLength: 320, Pattern: mailFromPattern, Chars: PrintableASCII,
			Env: config.EnvMailFrom, Functions: []string{FnNotify, FnReply},
			Description: `the sender, "Name <address>" or an address, verified in SES (CRITICIZER_MAIL_FROM); printable ASCII, at most 320 characters (a name outside ASCII as an RFC 2047 encoded word)`},
		{Name: "SesIdentity", MaxLength: 320, Pattern: `^$|^[A-Za-z0-9._+@-]+$`, Chars: PlainASCII,
			DefaultNote: "the sender's domain",
			Description: "the verified SES identity the sender sends as besides its address (notify's IAM grant), when it is not the sender's domain: e.g. a parent domain"},
		{Name: "Critic", Default: config.CriticOffline, Allowed: []string{config.CriticOffline, config.CriticBedrock, config.CriticOpenAI},
			Env: config.EnvCritic, Functions: []string{FnFetch, FnLLM},
			Description: "the llm stage's critic: offline, bedrock or openai (CRITICIZER_CRITIC); bedrock and openai need CriticModel; with a model, fetch reads the changed files at the head for the code around each hunk"},
		{Name: "CriticModel", MaxLength: 100, Pattern: modelPattern, Chars: PlainASCII,
			Description: "bedrock: a model id (anthropic.claude-3-5-sonnet-20240620-v1:0) or a cross-region inference profile id (us.anthropic.claude-sonnet-4-20250514-v1:0, eu.…, apac.…, global.…; current Anthropic models are invoked only this way) (CRITICIZER_BEDROCK_MODEL_ID); openai: the model name (CRITICIZER_OPENAI_MODEL)"},
		{Name: "OpenAIBaseUrl", Context: "openaiBaseUrl", MaxLength: 128, Pattern: `^$|^https?://[!-~]+$`, Chars: PrintableASCII,
			Env: config.EnvOpenAIBaseURL, Functions: []string{FnLLM}, OmitEmpty: true,
			DefaultNote: "api.openai.com",
			Description: "openai: an OpenAI-compatible server's base URL (CRITICIZER_OPENAI_BASE_URL); its key goes in the CriticSecret"},
		{Name: "LlmMaxFindings", Number: true, Default: strconv.Itoa(config.DefaultLLMMaxFindings), Min: 1, Max: 50,
			Description: "findings a model review asks for and keeps, 1 to 50 (CRITICIZER_LLM_MAX_FINDINGS)"},
		{Name: "LearnAfter", Number: true, Default: strconv.Itoa(config.DefaultLearnAfter), Min: 1, Max: 100,
			Env: config.EnvLearnAfter, Functions: []string{FnIntake},
			Description: "readers whose Wrong in one repository, outnumbering its Useful, propose leaving a rule out there, 1 to 100 (CRITICIZER_LEARN_AFTER, R-LEARN-1); the admin API's learnings use it, and the CLI reads the same variable from its own environment"},
		{Name: "AllowedRecipientDomains", MaxLength: config.MaxAllowedRecipientDomainsBytes, Pattern: `^[A-Za-z0-9., -]*$`, Chars: PlainASCII,
			Env: config.EnvAllowedRecipientDomains, Functions: []string{FnIntake, FnNotify}, OmitEmpty: true,
			DefaultNote: "— (every domain)",
			Description: "the domains mail may go to, comma-separated and exact (a subdomain is listed on its own), in ASCII, at most 1,024 characters (CRITICIZER_ALLOWED_RECIPIENT_DOMAINS); other addresses are skipped_domain, never sent; recommended"},
		{Name: "MaxSendRate", Number: true, Default: strconv.Itoa(config.DefaultMaxSendRate), Min: 0, Max: 100000,
			Env: config.EnvMaxSendRate, Functions: []string{FnNotify},
			Description: "the SES account's maximum send rate, emails per second (0 to 100000), kept by every notifier together; 0 turns the limiter off (CRITICIZER_MAX_SEND_RATE)"},
		{Name: "NotifyReservedConcurrency", Default: "0", MaxLength: 4, Pattern: `^(0|[5-9]|[1-9][0-9]{1,3})$`, Chars: PlainASCII,
			DefaultNote: "0 (none)",
			Description: "concurrency reserved for notify: 0, or at least 5 (its event source's maximum concurrency); needs an account concurrency quota above the default 10 (reserving on such an account fails the deploy)"},
		{Name: "UncertainSend", Context: "uncertainSend", Default: "resend", Allowed: []string{"resend", "hold"},
			Env: config.EnvUncertainSend, Functions: []string{FnNotify},
			Description: "what a send whose answer was lost does once the evidence path caught up past it with no SES event naming it (CRITICIZER_UNCERTAIN_SEND, R-EVIDENCE-9): resend (the email may come twice, alarmed as LateSendEvents) or hold (never resent without evidence: it waits for its events or an operator, criticizer deliveries held)"},
		{Name: "InboundDomain", MaxLength: config.MaxInboundDomainLen, Pattern: `^$|^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`, Chars: PlainASCII,
			Env: config.EnvInboundDomain, Functions: []string{FnNotify, FnReply}, OmitEmpty: true,
			DefaultNote: "— (replies off)",
			Description: "the domain replies are received at, a domain verified in SES whose MX is inbound-smtp.<region>.amazonaws.com (CRITICIZER_INBOUND_DOMAIN); each email's Reply-To is reply+<key>@ it, and a receipt rule set is created for it, to be made active by hand (docs/deploy.md); empty: replies off, no Reply-To, no rule set"},
		{Name: "CodeHostStatus", Default: "off", Allowed: []string{"off", "on"},
			Env: config.EnvCodeHostStatus, Functions: []string{FnNotify},
			Description: "on: each version's review is also posted on the change (a check run with a GitHub App, a commit status with a GitHub or GitLab token, a Gerrit review message) (CRITICIZER_CODE_HOST_STATUS, R-CHANNEL-10): add the code host's credentials to the NotifySecret too, which notify alone reads; a repository's code_host_status: off turns its own off"},
		{Name: "OutboundWebhooks", Default: "off", Allowed: []string{"off", "on"},
			Description: "on: notify's secret names signed webhook destinations (CRITICIZER_OUTBOUND_WEBHOOKS, R-CHANNEL-8); the template cannot read that secret, so this says it has them: with it or CodeHostStatus on, fetch, llm and notify announce each version's phases to notify (CRITICIZER_CHANNELS, R-CHANNEL-15); off with neither, a review makes an email-only deployment's calls"},
		{Name: "LogLevel", Default: "info", Allowed: []string{"debug", "info", "warn", "error"},
			Env: config.EnvLogLevel, Functions: all,
			Description: "every function's LOG_LEVEL (metrics are written at every level)"},
		{Name: "LogRetentionDays", Number: true, Default: "30", Min: 1, Max: 3653,
			Allowed:     []string{"1", "3", "5", "7", "14", "30", "60", "90", "120", "150", "180", "365", "400", "545", "731", "1096", "1827", "2192", "2557", "2922", "3288", "3653"},
			Description: "how many days the functions' and the API's logs are kept"},
		{Name: "AlarmEmail", MaxLength: 254, Pattern: `^$|^[!-~]+@[!-~]+$`, Chars: PrintableASCII,
			Description: "an address subscribed to the alarm topic (it confirms by email); empty: none, subscribe to the AlarmTopicArn output instead"},
		{Name: "LocalStackHost", SAMOnly: true, MaxLength: 253, Pattern: `^$|^[A-Za-z0-9.-]+$`, Chars: PlainASCII,
			Description: "only for sam local invoke against the stack of make run (make invoke-<fn> SAM=1 sets it): the host of that stack as SAM's container sees it, e.g. host.docker.internal; empty when deployed"},
	}
}

// conditions are the named conditions values and resources use: these,
// and Has<Name> for each OmitEmpty parameter (its variable is left out
// when it is empty).
func conditions(params []Param) []NamedCondition {
	notEmpty := func(p string) Cond { return Not(Equals(Ref(p), Lit(""))) }
	out := []NamedCondition{
		{Name: "Local", Cond: notEmpty("LocalStackHost")},
		{Name: "IsBedrock", Cond: Equals(Ref("Critic"), Lit(config.CriticBedrock))},
		{Name: "IsOpenAI", Cond: Equals(Ref("Critic"), Lit(config.CriticOpenAI))},
		{Name: "IsModel", Cond: Not(Equals(Ref("Critic"), Lit(config.CriticOffline)))},
		{Name: "HasSesIdentity", Cond: notEmpty("SesIdentity")},
		{Name: "ReserveNotify", Cond: Not(Equals(Ref("NotifyReservedConcurrency"), Lit("0")))},
		{Name: "HasAlarmEmail", Cond: notEmpty("AlarmEmail")},
		{Name: "HasChannels", Cond: Or(Equals(Ref("OutboundWebhooks"), Lit("on")), Equals(Ref("CodeHostStatus"), Lit("on")))},
	}
	for _, p := range params {
		if p.OmitEmpty {
			out = append(out, NamedCondition{Name: p.HasCondition(), Cond: notEmpty(p.Name)})
		}
	}
	return out
}

// dur writes a duration as config reads it, without zero units (720h,
// 2m).
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// The actions of the grants the functions share.
var (
	consumeActions = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
	sendActions    = []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
	tableRead      = []string{"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"}
	tableWrite     = []string{"dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
)

// table is a table's ARN and its indexes' ARNs.
func table(id string) []Value {
	out := []Value{GetAtt(id, "Arn")}
	t := schema.Jobs()
	if id == IDDeliveriesTable {
		t = schema.Deliveries()
	}
	for _, ix := range t.Indexes {
		out = append(out, Join("", GetAtt(id, "Arn"), Lit("/index/"+ix.Name)))
	}
	return out
}

func readTable(id string) Grant {
	return Grant{Actions: tableRead, Resources: table(id)}
}

func readWriteTable(id string) Grant {
	return Grant{Actions: append(append([]string{}, tableRead...), tableWrite...), Resources: table(id)}
}

// items allows actions on the jobs table's items whose key starts with one
// of prefixes, and on no others.
func items(note string, actions []string, prefixes ...string) Grant {
	var keys []Value
	for _, p := range prefixes {
		keys = append(keys, Lit(p+"*"))
	}
	return Grant{Actions: actions, Resources: []Value{GetAtt(IDJobsTable, "Arn")}, Note: note,
		Condition: []IAMCondition{{Op: "ForAllValues:StringLike", Key: "dynamodb:LeadingKeys", Values: keys}}}
}

func send(note string, ids ...string) Grant {
	var res []Value
	for _, id := range ids {
		res = append(res, GetAtt(id, "Arn"))
	}
	return Grant{Actions: sendActions, Resources: res, Note: note}
}

// objects allows actions on the payload bucket's objects under prefix,
// and with list, ListBucket: without it a missing key is AccessDenied,
// not NoSuchKey (internal/blob maps NoSuchKey to ErrNotFound).
func objects(note, prefix string, list bool, actions ...string) []Grant {
	out := []Grant{{Actions: actions, Resources: []Value{Join("", GetAtt(IDPayloadBucket, "Arn"), Lit("/"+prefix))}, Note: note}}
	if list {
		out = append(out, Grant{Actions: []string{"s3:ListBucket"}, Resources: []Value{GetAtt(IDPayloadBucket, "Arn")}})
	}
	return out
}

// arn is an ARN in the stack's partition, region and account.
func arn(service, resource string, name Value) Value {
	return Join("", Lit("arn:"), Ref("AWS::Partition"), Lit(":"+service+":"), Ref("AWS::Region"), Lit(":"), Ref("AWS::AccountId"),
		Lit(":"+resource+"/"), name)
}

// senderAddress is MailFrom's address: the text between its angle
// brackets, or all of it. CloudFormation has no "last element", so the
// value is joined to itself behind a "<" first: "a@b<a@b" and
// "N <a@b><N <a@b>" both have the address second.
func senderAddress() Value {
	twice := Join("", Ref("MailFrom"), Lit("<"), Ref("MailFrom"))
	return Select("0", Split(">", Select("1", Split("<", twice))))
}

// sesIdentity is the identity notify sends as: SesIdentity, or the
// sender's domain.
func sesIdentity() Value {
	return If("HasSesIdentity", Ref("SesIdentity"), Select("1", Split("@", senderAddress())))
}

func functions() []Function {
	q := func(s job.Stage) string { return QueueID(string(s)) }
	dlq := func(s job.Stage) string { return DLQID(string(s)) }
	qURL := func(s job.Stage) Var { return Var{Name: config.QueueEnv(s), Value: Ref(q(s))} }
	dlqURL := func(s job.Stage) Var { return Var{Name: config.DLQEnv(s), Value: Ref(dlq(s))} }
	jobs := Var{Name: config.EnvJobsTable, Value: Ref(IDJobsTable)}
	deliveries := Var{Name: config.EnvDeliveriesTable, Value: Ref(IDDeliveriesTable)}
	bucket := Var{Name: config.EnvPayloadBucket, Value: Ref(IDPayloadBucket)}
	receives := Var{Name: config.EnvMaxReceiveCount, Value: Lit(strconv.Itoa(MaxReceiveCount)), Note: "the queue's maxReceiveCount (R-STAGE-10)"}
	margin := Var{Name: config.EnvEvidenceMargin, Value: Lit(dur(config.DefaultEvidenceMargin))}
	configSet := Var{Name: config.EnvConfigurationSet, Value: Ref(IDConfigurationSet)}
	// channels is set only when the deployment has a channel other than
	// email: without, the stages send no post task (R-CHANNEL-15), and
	// the variable takes no room.
	channels := Var{Name: config.EnvChannels, Value: If("HasChannels", Lit("on"), NoValue()),
		Note: "a channel other than email (OutboundWebhooks or CodeHostStatus on): announce each version's phases (R-CHANNEL-15)"}
	fetch, llm, notify := job.StageFetch, job.StageLLM, job.StageNotify

	return []Function{
		{Name: FnIntake, MemoryMB: 256, Timeout: 10, Description: "HTTP API: webhook intake, job status, unsubscribe, admin",
			Env: []Var{jobs, deliveries, bucket, qURL(fetch),
				{Name: config.EnvIdempotencyTTL, Value: Lit(dur(config.DefaultIdempotencyTTL))}},
			// Its webhook credentials, and the unsubscribe key it verifies
			// /unsubscribe/{token} with.
			Secrets: []string{IDWebhookSecret, IDUnsubscribeSecret},
			Grants: append([]Grant{
				readWriteTable(IDJobsTable),
				withNote(readTable(IDDeliveriesTable), "GET /jobs/{id} shows each recipient's row"),
				send("", q(fetch)),
			}, objects("its diffs", "diffs/*", false, "s3:PutObject")...)},
		{Name: FnFetch, MemoryMB: 256, Timeout: 60, Queue: string(fetch), Description: "fetch stage: changelist diff into the payload bucket",
			Env: []Var{jobs, bucket, qURL(fetch), dlqURL(fetch), receives, qURL(llm), channels,
				withVarNote(qURL(notify), "a reviewer requested after the version was mailed: its job goes back to notify")},
			Secrets: []string{IDFetchSecret},
			Grants: append([]Grant{
				items("its job's items only: no delete, not the unsubscribe, suppression or idempotency records",
					[]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, schema.PrefixJob, schema.PrefixSourceRef),
				items("deciding who reviews a version: the changelist's roster", []string{"dynamodb:GetItem"}, schema.PrefixRoster),
				items("the reviewer directory's entries", []string{"dynamodb:BatchGetItem"}, schema.PrefixDirectory),
				items("the directory's list of unknown reviewers", []string{"dynamodb:UpdateItem"}, schema.PrefixUnknown),
				items("a pending head commit's place in its code host's order, read and settled (R-SOURCE-6)",
					[]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, schema.PrefixHeadSHA),
				send("the next stage; its own queue (a rate-limited message is deferred as a delayed copy) and its DLQ; "+
					"notify, for a reviewer requested after the version was mailed", q(llm), q(fetch), dlq(fetch), q(notify)),
			}, objects("its diffs", "diffs/*", true, "s3:PutObject", "s3:GetObject")...)},
		{Name: FnLLM, MemoryMB: 512, Timeout: LLMTimeout, Queue: string(llm), BatchSize: 1, MaxConcurrency: LLMMaxConcurrency,
			Description: "llm stage: the critic reviews the diff",
			Note:        "One message per invocation: the model's worst case (CRITICIZER_MODEL_TIMEOUT) and the work around it fit its timeout with room to spare (R-STAGE-9); at most 3 at a time (R-LIMIT-4).",
			Env: []Var{jobs, bucket, qURL(llm), dlqURL(llm), receives, qURL(notify), channels,
				{Name: config.EnvModelTimeout, Value: Lit(dur(config.DefaultModelTimeout)), Note: "one model call's bound; its timeout is sized from it (R-STAGE-9)"},
				{Name: config.EnvBedrockModelID, Value: If("IsBedrock", Ref("CriticModel"), NoValue())},
				{Name: config.EnvOpenAIModel, Value: If("IsOpenAI", Ref("CriticModel"), NoValue())},
				{Name: config.EnvLLMMaxFindings, Value: If("IsModel", Ref("LlmMaxFindings"), NoValue())}},
			Secrets: []string{IDCriticSecret},
			Grants: append(append([]Grant{
				items("its job's items only: no delete, not the unsubscribe, suppression or idempotency records",
					[]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, schema.PrefixJob, schema.PrefixSourceRef),
				items("the model-run budgets' windows, in one TransactWriteItems per run (R-BUDGET-1)", []string{"dynamodb:UpdateItem"}, schema.PrefixBudget),
				items("the rules a repository's accepted learnings leave out of its reviews (R-LEARN-2)", []string{"dynamodb:GetItem"}, schema.PrefixLearning),
				send("the next stage; its own queue and its DLQ", q(notify), q(llm), dlq(llm)),
			}, objects("the diffs", "diffs/*", true, "s3:GetObject")...),
				Grant{Actions: []string{"s3:GetObject"}, Resources: []Value{Join("", GetAtt(IDPayloadBucket, "Arn"), Lit("/"+config.ReviewInstructionsKey))},
					Note: "the deployment's review instructions, read at most every 5 minutes (internal/instructions)"},
				// The model, or the inference profile and the models it
				// routes to in any region, but only through that profile.
				Grant{When: "IsBedrock", Actions: []string{"bedrock:InvokeModel"}, Resources: []Value{
					Join("", Lit("arn:"), Ref("AWS::Partition"), Lit(":bedrock:"), Ref("AWS::Region"), Lit("::foundation-model/"), Ref("CriticModel")),
					arn("bedrock", "inference-profile", Ref("CriticModel"))},
					Note: "bedrock: the model, or the inference profile"},
				Grant{When: "IsBedrock", Actions: []string{"bedrock:InvokeModel"},
					Resources: []Value{Join("", Lit("arn:"), Ref("AWS::Partition"), Lit(":bedrock:*::foundation-model/*"))},
					Condition: []IAMCondition{{Op: "StringEquals", Key: "bedrock:InferenceProfileArn", Values: []Value{arn("bedrock", "inference-profile", Ref("CriticModel"))}}},
					Note:      "bedrock: the models an inference profile routes to, in any region, only through that profile"})},
		{Name: FnNotify, MemoryMB: 256, Timeout: 60, Queue: string(notify), MaxConcurrency: NotifyMaxConcurrency,
			Reserved: "NotifyReservedConcurrency", ReservedWhen: "ReserveNotify",
			Description: "notify stage: the outbox sends the critique with SES v2",
			Note:        "Its reservation is opt-in (NotifyReservedConcurrency): reserving fails the deploy on an account at the default concurrency quota of 10. Its event source's MaximumConcurrency (5) caps its pollers either way.",
			Env: []Var{jobs, deliveries, qURL(notify), dlqURL(notify), receives, configSet, channels,
				{Name: config.EnvDeliveryLease, Value: Lit(dur(config.DefaultDeliveryLease))}, margin,
				{Name: config.EnvPublicURL, Value: GetAtt(IDHTTPAPI, "ApiEndpoint"), Note: "unsubscribe and vote links are built under the API's URL"}},
			// The unsubscribe key (it signs the links), and its own: the
			// webhook destinations and the code host's credentials.
			Secrets: []string{IDUnsubscribeSecret, IDNotifySecret},
			Grants: []Grant{
				withNote(readWriteTable(IDJobsTable), "the read includes BatchGetItem: recipients' PREF#/SUPP# items; and the send-rate windows"),
				readWriteTable(IDDeliveriesTable),
				send("its own queue (rate-limit deferrals) and its DLQ", q(notify), dlq(notify)),
				{Sid: "SendAsTheSenderThroughTheConfigurationSet", Actions: []string{"ses:SendEmail"}, Resources: []Value{
					arn("ses", "identity", sesIdentity()), arn("ses", "identity", senderAddress()),
					arn("ses", "configuration-set", Ref(IDConfigurationSet))},
					Note: "as the sender's identity (its domain or SesIdentity, and its address: whichever SES verified) through the configuration set only"},
				{Sid: "ReadTheAccountsSendingQuota", Actions: []string{"ses:GetAccount"}, Resources: []Value{Lit("*")},
					Note: "the account's sending quota (R-RATE-2, R-RATE-3): GetAccount acts on no resource, so IAM accepts it only on *"},
			}},
		{Name: FnFeedback, MemoryMB: 128, Timeout: FeedbackTimeoutSeconds, Queue: QFeedback, Description: "SES event publishing (SNS to SQS) into delivery rows",
			Note: "Its timeout sets its queue's visibility timeout (6x, +1 s): the evidence margin must exceed it (R-EVIDENCE-2).",
			Env: []Var{deliveries, jobs,
				{Name: config.QueueEnv(notify), Value: Ref(q(notify)), Note: "a transient bounce sends the delivery again: its job is enqueued at notify"},
				withVarNote(margin, "each Send event is measured against the publish bound (R-EVIDENCE-7)"),
				withVarNote(bucket, "a record that can never be evidence is kept under quarantine/ before it is acknowledged (R-EVIDENCE-10)")},
			Grants: append([]Grant{
				readWriteTable(IDDeliveriesTable),
				{Actions: []string{"dynamodb:UpdateItem"}, Resources: []Value{GetAtt(IDJobsTable, "Arn")},
					Note: "suppressions (a permanent bounce, a complaint) are UpdateItem upserts of SUPP# items, and a resend reopens the job with a conditional UpdateItem: nothing else in the jobs table"},
				send("the resend's notify message; no other queue", q(notify)),
			}, objects("a copy of each record that can never be evidence, written and never read (R-EVIDENCE-10)", QuarantinePrefix+"*", false, "s3:PutObject")...)},
		{Name: FnReply, MemoryMB: 256, Timeout: 30, Queue: QReply, MaxConcurrency: ReplyMaxConcurrency,
			Description: "replies to the emails (SES receipt rule, S3, SNS): wrong N, useful N, mute, unsubscribe, help",
			Note:        "Each reply is read once from the payload bucket's inbound/ prefix, checked (SES's verdicts, its From, loops, its bounds) and acted on; its confirmation is a delivery row notify sends: no SES permission here.",
			Env: []Var{jobs, deliveries, bucket, receives,
				withVarNote(qURL(notify), "the confirmation's reply task"),
				{Name: config.EnvRepliesPerHour, Value: Lit(strconv.Itoa(config.DefaultRepliesPerHour)), Note: "replies to one email acted on in an hour (R-REPLY-6)"}},
			// The unsubscribe key: the reply keys are derived from it.
			Secrets: []string{IDUnsubscribeSecret},
			Grants: append([]Grant{
				items("the answered email's job (its critique), the votes and marks a reply records (the vote links' items), the team's tally of them "+
					"(R-LEARN-1), mutes, reply windows, the claim of the receipt that acts on a reply, and unsubscribes",
					[]string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
					schema.PrefixJob, schema.PrefixVote, schema.PrefixDismissal, schema.PrefixMute, schema.PrefixReplyWindow, schema.PrefixReplyClaim,
					schema.PrefixPreference, schema.PrefixLearning),
				items("a change's author's directory entry: their own votes are not tallied (R-LEARN-1)", []string{"dynamodb:GetItem"}, schema.PrefixDirectory),
				{Actions: []string{"dynamodb:GetItem", "dynamodb:PutItem"}, Resources: []Value{GetAtt(IDDeliveriesTable, "Arn")},
					Note: "the answered email's row; the confirmation's row, created once (a conditional put)"},
				send("the confirmation's reply task; no other queue", q(notify)),
			}, wildcard(objects("the replies SES stored, read once", InboundPrefix+"*", true, "s3:GetObject"),
				"SES names each reply's object by its message id (inbound/<SES message id>), unknown until a reply arrives; the grant is "+
					"s3:GetObject under the inbound/ prefix of the stack's own payload bucket, which SES writes and a lifecycle rule expires, "+
					"and the reply function writes nothing there.")...)},
		{Name: FnSweeper, MemoryMB: 256, Timeout: 120, Schedule: rate(config.DefaultSweepEvery),
			Description: "every minute: stuck jobs, stuck sends, sends without evidence, the feedback queue drained",
			Note:        "Every minute: besides its sweeps, each run may find the feedback queue drained, which settles a send whose answer was lost. Invoked without retries: the next run is the retry.",
			Env: []Var{jobs, deliveries, qURL(fetch), qURL(llm), qURL(notify),
				{Name: config.EnvSweepStuckAfter, Value: Lit(dur(config.DefaultSweepStuckAfter))},
				{Name: config.EnvEvidenceWindow, Value: Lit(dur(config.DefaultEvidenceWindow))},
				margin, configSet,
				{Name: config.EnvFeedbackQueueURL, Value: Ref(QueueID(QFeedback)), Note: "the evidence path's drain check (internal/drain): the feedback queue's and its DLQ's counters"},
				{Name: config.EnvFeedbackDLQURL, Value: Ref(DLQID(QFeedback))},
				{Name: config.EnvCounterLag, Value: Lit(dur(config.DefaultCounterLag))},
				{Name: config.EnvSweepEvery, Value: Lit(dur(config.DefaultSweepEvery)), Note: "its own schedule: the drain rule's run of clear readings (internal/drain)"}},
			Grants: []Grant{
				readWriteTable(IDJobsTable), readWriteTable(IDDeliveriesTable),
				send("a stuck job, at its stage", q(fetch), q(llm), q(notify)),
				{Actions: []string{"sqs:GetQueueAttributes"}, Resources: []Value{GetAtt(QueueID(QFeedback), "Arn"), GetAtt(DLQID(QFeedback), "Arn")},
					Note: "counters only: it neither receives nor deletes there"},
			}},
	}
}

func withNote(g Grant, note string) Grant { g.Note = note; return g }

// wildcard gives the first of gs (objects' grant on a prefix) the reason
// its wildcard is accepted (Grant.Wildcard).
func wildcard(gs []Grant, reason string) []Grant {
	gs[0].Wildcard = reason
	return gs
}

// rate is an EventBridge schedule expression for every d, in whole
// minutes.
func rate(d time.Duration) string {
	m := int(d / time.Minute)
	if m == 1 {
		return "rate(1 minute)"
	}
	return "rate(" + strconv.Itoa(m) + " minutes)"
}

func withVarNote(v Var, note string) Var { v.Note = note; return v }
