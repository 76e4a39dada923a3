package devstack

import (
	"fmt"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
)

// LocalAccount and LocalRegion are the local stack's account and region,
// as the emulators write them into ARNs and queue URLs.
const (
	LocalAccount = "000000000000"
	LocalRegion  = "us-east-1"
)

// LocalBinding is what the template's resources are on the local stack
// besides what Provision creates: the secrets' ARNs by logical id (in the
// local Secrets Manager), the SES configuration set's name and the HTTP
// API's id.
type LocalBinding struct {
	Secrets          map[string]string
	ConfigurationSet string
	HTTPAPIID        string
	// APIEndpoint, if set, is the HTTP API's ApiEndpoint (the local
	// stack's own address) instead of one made up from HTTPAPIID.
	APIEndpoint string
	// Parameters override the template's defaults.
	Parameters map[string]string
}

// BindLocal is the stack of a rehearsal: template t deployed as stack
// name (Provision's prefix) onto the local resources res. Queues are
// matched by the name their QueueName property evaluates to, as
// CloudFormation names them; the tables, bucket and topic, which the
// template leaves to CloudFormation to name, by logical id. A resource
// left unbound makes any variable that refers to it an error
// (Template.FunctionEnv).
func BindLocal(t *Template, name string, res Resources, b LocalBinding) (StackValues, error) {
	s := StackValues{StackName: name, Region: LocalRegion, AccountID: LocalAccount, Partition: "aws", URLSuffix: "amazonaws.com",
		Parameters: b.Parameters, Resources: map[string]BoundResource{}}
	queues := map[string]string{} // name → URL
	for _, st := range job.Stages() {
		for _, u := range []string{res.Queues.Queue[st], res.Queues.DLQ[st]} {
			queues[queueName(u)] = u
		}
	}
	for _, u := range []string{res.FeedbackQueue, res.FeedbackDLQ, res.ReplyQueue, res.ReplyDLQ} {
		if u != "" {
			queues[queueName(u)] = u
		}
	}
	for _, id := range t.Resources("AWS::SQS::Queue") {
		n := t.Property(id, "QueueName")
		if n == nil {
			continue // CloudFormation would make one up: nothing local has it
		}
		qn, err := t.Eval(n, s)
		if err != nil {
			return s, fmt.Errorf("%s.QueueName: %w", id, err)
		}
		if u, ok := queues[qn]; ok {
			s.Resources[id] = BoundResource{Ref: u, Attrs: map[string]string{"QueueName": qn, "QueueUrl": u,
				"Arn": fmt.Sprintf("arn:aws:sqs:%s:%s:%s", LocalRegion, LocalAccount, qn)}}
		}
	}
	arn := func(service, resource string) string {
		return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, LocalRegion, LocalAccount, resource)
	}
	named := map[string]BoundResource{
		"JobsTable":       {Ref: res.JobsTable, Attrs: map[string]string{"Arn": arn("dynamodb", "table/"+res.JobsTable)}},
		"DeliveriesTable": {Ref: res.DeliveriesTable, Attrs: map[string]string{"Arn": arn("dynamodb", "table/"+res.DeliveriesTable)}},
		"PayloadBucket":   {Ref: res.PayloadBucket, Attrs: map[string]string{"Arn": "arn:aws:s3:::" + res.PayloadBucket}},
		"SesEventsTopic":  {Ref: res.EventsTopicARN, Attrs: map[string]string{"TopicName": queueName(res.EventsTopicARN)}},
		"InboundTopic":    {Ref: res.InboundTopicARN, Attrs: map[string]string{"TopicName": queueName(res.InboundTopicARN)}},
	}
	if b.ConfigurationSet != "" {
		named["ConfigurationSet"] = BoundResource{Ref: b.ConfigurationSet}
	}
	if b.HTTPAPIID != "" || b.APIEndpoint != "" {
		endpoint := b.APIEndpoint
		if endpoint == "" {
			endpoint = fmt.Sprintf("https://%s.execute-api.%s.amazonaws.com", b.HTTPAPIID, LocalRegion)
		}
		id := b.HTTPAPIID
		if id == "" {
			id = "local"
		}
		named["HttpApi"] = BoundResource{Ref: id, Attrs: map[string]string{"ApiId": id, "ApiEndpoint": endpoint}}
	}
	for id, r := range named {
		if r.Ref != "" {
			s.Resources[id] = r
		}
	}
	// Each function's log group, which its role may write (Lambda writes
	// locally to the process's output: nothing is created).
	for _, id := range t.Resources("AWS::Logs::LogGroup") {
		lg := "/aws/lambda/" + name + "-" + id
		s.Resources[id] = BoundResource{Ref: lg, Attrs: map[string]string{"Arn": arn("logs", "log-group:"+lg+":*")}}
	}
	for id, a := range b.Secrets {
		s.Resources[id] = BoundResource{Ref: a, Attrs: map[string]string{"Id": a}}
	}
	return s, nil
}

// PlaceholderResources are the names Provision would create with prefix
// name, with made-up queue URLs: enough to evaluate a template's
// environments before any emulator runs (the rehearsal's first check).
func PlaceholderResources(name string) Resources {
	q := func(n string) string { return "http://127.0.0.1:1/" + LocalAccount + "/" + name + "-" + n }
	res := Resources{Prefix: name, JobsTable: name + "-jobs", DeliveriesTable: name + "-deliveries", PayloadBucket: name + "-payloads",
		Queues: queue.URLs{Queue: map[job.Stage]string{}, DLQ: map[job.Stage]string{}}, QueueARNs: map[job.Stage]string{},
		EventsTopicARN: fmt.Sprintf("arn:aws:sns:%s:%s:%s-ses-events", LocalRegion, LocalAccount, name),
		FeedbackQueue:  q("feedback"), FeedbackDLQ: q("feedback-dlq"),
		InboundTopicARN: fmt.Sprintf("arn:aws:sns:%s:%s:%s-inbound", LocalRegion, LocalAccount, name),
		ReplyQueue:      q("reply"), ReplyDLQ: q("reply-dlq")}
	for _, s := range job.Stages() {
		res.Queues.Queue[s], res.Queues.DLQ[s] = q(string(s)), q(string(s)+"-dlq")
	}
	return res
}
