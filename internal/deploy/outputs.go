package deploy

import (
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
)

// outputs are what an operator (and the CLI, by config's names) reads
// from the stack.
func outputs(d Deployment) []Output {
	var webhooks []string
	for _, s := range job.Sources() {
		webhooks = append(webhooks, s)
	}
	out := []Output{
		{Name: "ApiUrl", Value: GetAtt(IDHTTPAPI, "ApiEndpoint"), Description: "HTTP API base URL (POST /webhooks/<" + strings.Join(webhooks, "|") + ">)"},
		{Name: "WebhookSecretArn", Value: Ref(IDWebhookSecret), Description: "intake's secrets (JSON): aws secretsmanager get-secret-value --secret-id <arn>"},
		{Name: "UnsubscribeSecretArn", Value: Ref(IDUnsubscribeSecret), Description: "the unsubscribe link signing key (intake and notify); changing it invalidates links in emails already sent"},
		{Name: "FetchSecretArn", Value: Ref(IDFetchSecret), Description: "fetch's secrets (JSON): source API tokens, Gerrit credentials, the reviewer directory"},
		{Name: "NotifySecretArn", Value: Ref(IDNotifySecret), Description: "notify's channel secrets (JSON): CRITICIZER_OUTBOUND_WEBHOOKS and, with CodeHostStatus on, the code host's credentials"},
		{Name: "CriticSecretArn", Value: Ref(IDCriticSecret), Description: "llm's secrets (JSON): CRITICIZER_OPENAI_API_KEY"},
		{Name: config.OutputJobsTable, Value: Ref(IDJobsTable), Description: "jobs table"},
		{Name: config.OutputDeliveriesTable, Value: Ref(IDDeliveriesTable), Description: "deliveries table"},
		{Name: "PayloadBucketName", Value: Ref(IDPayloadBucket), Description: "payload bucket"},
		{Name: config.OutputConfigurationSet, Value: Ref(IDConfigurationSet), Description: "SES configuration set"},
		{Name: "AlarmTopicArn", Value: Ref(IDAlarmTopic), Description: "subscribe operators to alarms here"},
	}
	for _, q := range d.Queues {
		s := job.Stage(q.Name)
		out = append(out,
			Output{Name: config.OutputQueueURL(s), Value: Ref(QueueID(q.Name)), Description: q.Name + " queue"},
			Output{Name: config.OutputDLQURL(s), Value: Ref(DLQID(q.Name)), Description: q.Name + " dead-letter queue"},
			// ARNs for aws sqs start-message-move-task (docs/operations.md).
			Output{Name: Title(q.Name) + "QueueArn", Value: GetAtt(QueueID(q.Name), "Arn"), Description: q.Name + " queue ARN"},
			Output{Name: Title(q.Name) + "DlqArn", Value: GetAtt(DLQID(q.Name), "Arn"), Description: q.Name + " dead-letter queue ARN"})
	}
	return out
}
