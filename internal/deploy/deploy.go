// Package deploy describes Criticizer's deployment once: the functions,
// their triggers, queues and dead-letter queues, tables and indexes, the
// environment each function is given, the HTTP API's routes, the IAM
// grants, the alarms, the dashboard and the outputs, and the deploy-time
// parameters. It is plain data — no AWS SDK, no CDK — so that the
// functions, the operator's CLI and the local stack can import it cheaply.
//
// Two renderings are made from it by internal/deploy/cfn: template.yaml
// (`make template`, committed; a test regenerates it byte for byte), and
// the template the CDK app in infra/ includes, with the parameters
// replaced by the app's context. A variable, a route, a grant or a
// function is added here and nowhere else (docs/development.md, "Adding to
// the deployment").
package deploy

import (
	"slices"
	"strconv"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Deployment is the whole stack.
type Deployment struct {
	Parameters []Param
	Conditions []NamedCondition
	Rules      []Rule
	Functions  []Function
	// Queues are the queues, each with its dead-letter queue, in the order
	// of the functions that consume them.
	Queues  []Queue
	Tables  []Table
	Bucket  Bucket
	Secrets []Secret
	// Inbound is SES email receiving for replies.
	Inbound Inbound
	API     API
	Alarms  []Alarm
	// Dashboard is its rows of graphs, two to a row.
	Dashboard [][]Graph
	Outputs   []Output
}

// Var is one environment variable of a function.
type Var struct {
	Name  string
	Value Value
	// Note is a comment in template.yaml: why the function has it.
	Note string
}

// Function is one Lambda function: provided.al2023 on arm64, handler
// bootstrap, its code functions/<Name> built by `make build`.
type Function struct {
	Name        string
	Description string
	MemoryMB    int
	// Timeout is the invocation's limit in seconds.
	Timeout int
	// Queue is the queue it consumes through an SQS event source, if any,
	// in batches of BatchSize (10 when 0) within a 1-second window, with at
	// most MaxConcurrency concurrent invocations (none when 0).
	Queue          string
	BatchSize      int
	MaxConcurrency int
	// Reserved is its reserved concurrency's parameter, if any (used when
	// ReservedWhen holds).
	Reserved, ReservedWhen string
	// Schedule is an EventBridge schedule expression that invokes it,
	// once, without retries (the next run is the retry).
	Schedule string
	// Env is its environment besides the parameters' variables
	// (Deployment.Environment has both).
	Env []Var
	// Secrets are the secrets it reads at start, by logical id: their ARNs
	// are CRITICIZER_SECRETS_ARN, and it may read each.
	Secrets []string
	// Grants are what it may do besides writing its own log group,
	// consuming its queue and reading its secrets (Deployment.Grants has
	// all).
	Grants []Grant
	// Note is a comment on the function in template.yaml.
	Note string
}

// BatchSizeOrDefault is the event source's batch size.
func (f Function) BatchSizeOrDefault() int {
	if f.BatchSize > 0 {
		return f.BatchSize
	}
	return DefaultBatchSize
}

// Grant is one IAM statement of a function's role: Actions allowed on
// Resources, under Condition, only where the template condition When
// holds (none: always).
type Grant struct {
	Sid       string
	Actions   []string
	Resources []Value
	Condition []IAMCondition
	When      string
	Note      string
	// Wildcard, when set, is why a wildcard in Resources is accepted: the
	// CDK app suppresses cdk-nag's AwsSolutions-IAM5 finding for exactly
	// those resources with it, as a route's Public reason suppresses
	// APIG4.
	Wildcard string
}

// IAMCondition is one condition of a statement: operator, key, values.
type IAMCondition struct {
	Op, Key string
	Values  []Value
}

// Queue is a queue with its dead-letter queue.
type Queue struct {
	// Name is the queue's (the stage's) name; the queue is named
	// <stack>-<Name> and its dead-letter queue <stack>-<Name>-dlq.
	Name string
	// VisibilitySeconds is the visibility timeout: VisibilityFactor times
	// the consumer's timeout, plus the batch window.
	VisibilitySeconds int
	// FromSNS is the SNS topic (logical id) that may send to it.
	FromSNS string
}

// Table is a DynamoDB table (on demand, PITR, deletion protection,
// retained), with TTL on schema.ExpiresAt.
type Table struct {
	ID     string
	Schema schema.Table
	Note   string
}

// Bucket is the payload bucket: private, SSE-S3, TLS only; objects under
// each of Expire's prefixes expire after that rule's days.
type Bucket struct {
	ID     string
	Expire []Expiry
}

// Expiry is one lifecycle rule: objects under Prefix expire after Days.
type Expiry struct {
	Prefix string
	Days   int
	// What the prefix holds, for the template's comment.
	What string
}

// Inbound is SES email receiving for replies (R-REPLY-1): a receipt rule
// set holding one rule for the inbound domain's recipients, whose S3
// action stores each raw message in the payload bucket under Prefix and
// notifies Topic, which delivers to Queue (raw) for the reply function.
// The rule set and the rule exist only while the domain parameter is set
// (Condition); SES receives with them only once the rule set is made the
// account's active one, which CloudFormation cannot do
// (docs/deploy.md, "Replies").
type Inbound struct {
	// Param is the inbound domain's parameter, Condition the condition
	// that holds when it is set.
	Param, Condition string
	// RuleSet and Rule are the names' suffixes: the rule set is named
	// <stack>-<RuleSet>, the rule <stack>-<Rule>.
	RuleSet, Rule string
	Topic         string
	Prefix        string
	Queue         string
}

// RuleSetName is the receipt rule set's name in a stack.
func (i Inbound) RuleSetName(stack string) string { return stack + "-" + i.RuleSet }

// Secret is a Secrets Manager secret: a JSON object of setting names
// (config.SecretEnv) to values. Generate, when set, is the key of a
// generated alphanumeric value of Length characters; otherwise it starts
// as "{}". Holds are the settings it may hold: the local stack gives a
// function those of the secrets it reads, and no others (internal/devstack).
type Secret struct {
	ID          string
	Description string
	Generate    string
	Length      int
	Note        string
	Holds       []string
}

// API is the HTTP API in front of intake.
type API struct {
	Description string
	Routes      []Route
	// ThrottleRate and ThrottleBurst are the default stage's, per route.
	ThrottleRate, ThrottleBurst int
	// AccessLogFormat is one JSON line per request.
	AccessLogFormat string
	// Function is the function every route integrates.
	Function string
}

// Alarm is one CloudWatch alarm: it notifies the alarm topic when it
// fires and when it clears (R-DEPLOY-2).
type Alarm struct {
	ID          string
	Description string
	Metric      Metric
	// Threshold: the alarm fires above it for Periods periods.
	Threshold float64
	Periods   int
	// MissingBreaches: no data fires the alarm (a gauge emitted on every
	// run); otherwise no data is fine.
	MissingBreaches bool
}

// Metric is a metric (Namespace, Name, one dimension, statistic, period
// in seconds) or a Metrics Insights query (Query).
type Metric struct {
	Namespace, Name string
	Dimension       string
	DimensionValue  Value
	Stat            string
	Period          int
	Query           string
	Label           string
}

// Graph is one dashboard graph.
type Graph struct {
	Title   string
	Metrics []Metric
}

// Output is one stack output.
type Output struct {
	Name, Description string
	Value             Value
}

// Settings shared by the queues and event sources.
const (
	// MaxReceiveCount is every queue's redrive limit: the stage runner
	// dead-letters by itself at attempt 5 with an envelope, and on the last
	// receive (R-STAGE-10), so the redrive is the crash-loop safety net.
	MaxReceiveCount = config.DefaultMaxReceiveCount
	// DefaultBatchSize is an SQS event source's batch size.
	DefaultBatchSize = 10
	// BatchWindowSeconds is the event sources' batching window.
	BatchWindowSeconds = 1
	// VisibilityFactor: a queue's visibility timeout is at least 6 times
	// its consumer's timeout (plus the batch window), AWS's guidance for
	// an SQS-triggered function.
	VisibilityFactor   = 6
	QueueRetentionDays = 4
	DLQRetentionDays   = 14
	// LLMMaxConcurrency caps llm's event source: at most 3 model reviews
	// at a time (R-LIMIT-4). An account starts with a concurrency quota of
	// 10: notify's 5 and llm's 3 leave 2 for intake, fetch, feedback and
	// the sweeper. One review is one model call of at most about 60,000
	// tokens (docs/deploy.md, "Quotas to request"): 3 at a time spend at
	// most 360,000 tokens a minute. A throttled poller only waits.
	LLMMaxConcurrency = 3
	// NotifyMaxConcurrency caps notify's event source (no account quota
	// needed); a reservation, when configured, is never below it, so the
	// mapping never outruns it (its throttles would count as receives).
	NotifyMaxConcurrency = 5
	// LLMTimeout is the llm function's timeout: the model's worst case
	// (config.DefaultModelTimeout, 5 minutes) and the stage's work around
	// it fit with room to spare, so a slow model never loses its batch
	// (R-STAGE-9).
	LLMTimeout = 360
	// PayloadExpiryDays: the payload bucket's diffs expire after it.
	PayloadExpiryDays = 30
	// QuarantinePrefix holds the feedback records that could never be
	// evidence (sesevent.QuarantinePrefix is under it), expiring after
	// QuarantineExpiryDays (sesevent.QuarantineExpiryDays): they may hold
	// addresses, so they go sooner than the diffs (R-EVIDENCE-10).
	QuarantinePrefix     = "quarantine/"
	QuarantineExpiryDays = 14
	// InboundPrefix holds the replies SES stores (inbound.ObjectPrefix),
	// expiring after InboundExpiryDays: read once, at once; they hold
	// addresses, so they go sooner than anything else.
	InboundPrefix     = "inbound/"
	InboundExpiryDays = 7
	// ReplyMaxConcurrency caps the reply function's event source: replies
	// are few, and the account's concurrency is shared (LLMMaxConcurrency).
	ReplyMaxConcurrency = 2
	// FeedbackTimeoutSeconds is the feedback function's timeout, which
	// sets its queue's visibility timeout and so the drain rule's horizon
	// (EvidenceLagAlarmSeconds).
	FeedbackTimeoutSeconds = 10
	// UnsubscribeKeyLength is the generated unsubscribe key's length in
	// alphanumeric characters (about 380 bits), twice config's minimum.
	UnsubscribeKeyLength = 64
	// WebhookSecretLength is the generated webhook secret's.
	WebhookSecretLength = 48
)

// Environment is function fn's whole environment: its own variables, then
// the parameters' that go to it, in the order of the parameters.
func (d Deployment) Environment(fn Function) []Var {
	out := slices.Clone(fn.Env)
	if len(fn.Secrets) > 0 {
		arns := make([]Value, len(fn.Secrets))
		for i, s := range fn.Secrets {
			arns[i] = Ref(s)
		}
		v := arns[0]
		if len(arns) > 1 {
			v = Join(",", arns...)
		}
		out = append(out, Var{Name: config.EnvSecretsARN, Value: v, Note: "read at start: its settings that are secrets, never in the environment"})
	}
	for _, p := range d.Parameters {
		if p.Env == "" || !slices.Contains(p.Functions, fn.Name) {
			continue
		}
		v := Ref(p.Name)
		if p.OmitEmpty {
			v = If(p.HasCondition(), v, NoValue())
		}
		out = append(out, Var{Name: p.Env, Value: v})
	}
	return out
}

// Grants is everything function fn may do: write its own log group,
// consume its queue, read its secrets, and its own Grants.
func (d Deployment) Grants(fn Function) []Grant {
	out := []Grant{{Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
		Resources: []Value{GetAtt(FunctionID(fn.Name)+"Logs", "Arn")}, Note: "its own log group only"}}
	if fn.Queue != "" {
		out = append(out, Grant{Actions: consumeActions, Resources: []Value{GetAtt(QueueID(fn.Queue), "Arn")},
			Note: "its event source: receive, delete and (the runner's backoff) change visibility on its own queue"})
	}
	if len(fn.Secrets) > 0 {
		var res []Value
		for _, s := range fn.Secrets {
			res = append(res, Ref(s))
		}
		out = append(out, Grant{Actions: []string{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}, Resources: res})
	}
	return append(out, fn.Grants...)
}

// Function returns the function named name.
func (d Deployment) Function(name string) (Function, bool) {
	i := slices.IndexFunc(d.Functions, func(f Function) bool { return f.Name == name })
	if i < 0 {
		return Function{}, false
	}
	return d.Functions[i], true
}

// Param returns the parameter named name.
func (d Deployment) Param(name string) (Param, bool) {
	i := slices.IndexFunc(d.Parameters, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return d.Parameters[i], true
}

// Names lists the functions' names, in the description's order.
func (d Deployment) Names() []string {
	out := make([]string, len(d.Functions))
	for i, f := range d.Functions {
		out[i] = f.Name
	}
	return out
}

// seconds formats a whole number of seconds.
func seconds(n int) string { return strconv.Itoa(n) }
