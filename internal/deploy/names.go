package deploy

import "strings"

// StackName is the default stack's name, which the operator's CLI looks
// for, and the prefix of the queues' names.
const StackName = "Criticizer"

// ContextAssetDir is the CDK app's one context key that is not a
// parameter: the directory holding <fn>/bootstrap for every function
// (`make build` writes ../build, relative to infra/).
const ContextAssetDir = "assetDir"

// The functions: each is functions/<name> and build/<name>/bootstrap.
const (
	FnIntake   = "intake"
	FnFetch    = "fetch"
	FnLLM      = "llm"
	FnNotify   = "notify"
	FnFeedback = "feedback"
	FnSweeper  = "sweeper"
	FnReply    = "reply"
)

// QFeedback is the queue of SES's events, which the feedback function
// consumes; the other queues are the pipeline's stages (job.Stages()).
const QFeedback = "feedback"

// QReply is the queue of SES's notifications of received replies, which
// the reply function consumes.
const QReply = "reply"

// Logical ids of the resources that are not per function or queue. They
// never change: a new id replaces the resource (the tables, queues,
// bucket and secrets are retained, so a replaced one would be orphaned
// with what it holds).
const (
	IDJobsTable         = "JobsTable"
	IDDeliveriesTable   = "DeliveriesTable"
	IDPayloadBucket     = "PayloadBucket"
	IDWebhookSecret     = "WebhookSecret"
	IDUnsubscribeSecret = "UnsubscribeSecret"
	IDFetchSecret       = "FetchSecret"
	IDCriticSecret      = "CriticSecret"
	IDNotifySecret      = "NotifySecret"
	IDConfigurationSet  = "ConfigurationSet"
	IDSESEventsTopic    = "SesEventsTopic"
	IDTopicKey          = "TopicKey"
	IDAlarmTopic        = "AlarmTopic"
	IDHTTPAPI           = "HttpApi"
	// Email receiving for replies (Deployment.Inbound).
	IDInboundTopic   = "InboundTopic"
	IDReceiptRuleSet = "ReceiptRuleSet"
	IDReceiptRule    = "ReceiptRule"
)

// FunctionID is a function's logical id (IntakeFunction).
func FunctionID(fn string) string { return Title(fn) + "Function" }

// QueueID is a queue's logical id (FetchQueue).
func QueueID(q string) string { return Title(q) + "Queue" }

// DLQID is a dead-letter queue's logical id (FetchDLQ).
func DLQID(q string) string { return Title(q) + "DLQ" }

// Title is s with its first letter in upper case.
func Title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
