package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Resources names what Provision creates.
type Resources struct {
	// Prefix names them all: the stack's name, as the template's
	// ${AWS::StackName}-<stage> names its queues.
	Prefix                                    string
	JobsTable, DeliveriesTable, PayloadBucket string
	Queues                                    queue.URLs
	QueueARNs                                 map[job.Stage]string
	// The SES event path: topic → feedback queue (with its DLQ).
	EventsTopicARN, FeedbackQueue, FeedbackQueueARN, FeedbackDLQ string
	// Replies: SES's receipt notifications' topic → reply queue (with
	// its DLQ), as deploy.Inbound describes them.
	InboundTopicARN, ReplyQueue, ReplyQueueARN, ReplyDLQ string
}

// Provision creates the tables, the stage queues with their dead-letter
// queues and redrive policies, and the payload bucket, named with prefix.
// It is idempotent: existing resources are kept.
func Provision(ctx context.Context, c *Clients, prefix string) (Resources, error) {
	r := Resources{Prefix: prefix,
		JobsTable: prefix + "-jobs", DeliveriesTable: prefix + "-deliveries", PayloadBucket: prefix + "-payloads",
		Queues: queue.URLs{Queue: map[job.Stage]string{}, DLQ: map[job.Stage]string{}}, QueueARNs: map[job.Stage]string{},
	}
	// The tables and queues the deployment describes (internal/deploy),
	// with its redrive limit and DLQ retention; the visibility timeout is
	// the local pollers' 30 s, which kill an invocation at its timeout.
	d := deploy.Describe()
	for _, t := range d.Tables {
		name := r.JobsTable
		if t.ID == deploy.IDDeliveriesTable {
			name = r.DeliveriesTable
		}
		if err := createTable(ctx, c.DynamoDB, name, t.Schema); err != nil {
			return r, err
		}
	}
	for _, q := range d.Queues {
		name := prefix + "-" + q.Name
		dlqURL, dlqARN, err := createQueue(ctx, c.SQS, name+"-dlq", map[string]string{"MessageRetentionPeriod": strconv.Itoa(deploy.DLQRetentionDays * 86400)})
		if err != nil {
			return r, err
		}
		redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(deploy.MaxReceiveCount)})
		url, arn, err := createQueue(ctx, c.SQS, name, map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": string(redrive)})
		if err != nil {
			return r, err
		}
		switch s := job.Stage(q.Name); {
		case s.Valid():
			r.Queues.Queue[s], r.Queues.DLQ[s], r.QueueARNs[s] = url, dlqURL, arn
		case q.Name == deploy.QReply:
			r.ReplyQueue, r.ReplyQueueARN, r.ReplyDLQ = url, arn, dlqURL
		default:
			r.FeedbackQueue, r.FeedbackQueueARN, r.FeedbackDLQ = url, arn, dlqURL
		}
	}
	topic, err := c.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(prefix + "-ses-events")})
	if err != nil {
		return r, fmt.Errorf("create topic: %w", err)
	}
	r.EventsTopicARN = aws.ToString(topic.TopicArn)
	if _, err := c.SNS.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(r.FeedbackQueueARN), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		return r, fmt.Errorf("subscribe feedback queue: %w", err)
	}
	inbound, err := c.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(prefix + "-inbound")})
	if err != nil {
		return r, fmt.Errorf("create topic: %w", err)
	}
	r.InboundTopicARN = aws.ToString(inbound.TopicArn)
	if _, err := c.SNS.Subscribe(ctx, &sns.SubscribeInput{TopicArn: inbound.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(r.ReplyQueueARN), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		return r, fmt.Errorf("subscribe reply queue: %w", err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(r.PayloadBucket)}); err != nil {
		var owned interface{ ErrorCode() string }
		if !errors.As(err, &owned) || (owned.ErrorCode() != "BucketAlreadyOwnedByYou" && owned.ErrorCode() != "BucketAlreadyExists") {
			return r, fmt.Errorf("create bucket %s: %w", r.PayloadBucket, err)
		}
	}
	return r, nil
}

// Apply writes the resource names into a function configuration.
func (r Resources) Apply(cfg *config.Config) {
	cfg.JobsTable, cfg.DeliveriesTable, cfg.PayloadBucket, cfg.Queues = r.JobsTable, r.DeliveriesTable, r.PayloadBucket, r.Queues
	cfg.FeedbackQueueURL, cfg.FeedbackDLQURL = r.FeedbackQueue, r.FeedbackDLQ
}

// createTable creates a table of t's schema (on demand, TTL on
// schema.ExpiresAt), as the deployment declares it.
func createTable(ctx context.Context, db *dynamodb.Client, name string, t schema.Table) error {
	attrs := []ddbtypes.AttributeDefinition{{AttributeName: aws.String(t.Key), AttributeType: ddbtypes.ScalarAttributeTypeS}}
	seen := map[string]bool{t.Key: true}
	var indexes []ddbtypes.GlobalSecondaryIndex
	for _, ix := range t.Indexes {
		keys := []ddbtypes.KeySchemaElement{{AttributeName: aws.String(ix.Hash), KeyType: ddbtypes.KeyTypeHash}}
		if ix.Range != "" {
			keys = append(keys, ddbtypes.KeySchemaElement{AttributeName: aws.String(ix.Range), KeyType: ddbtypes.KeyTypeRange})
		}
		for _, a := range []string{ix.Hash, ix.Range} {
			if a != "" && !seen[a] {
				seen[a] = true
				attrs = append(attrs, ddbtypes.AttributeDefinition{AttributeName: aws.String(a), AttributeType: ddbtypes.ScalarAttributeTypeS})
			}
		}
		proj := ddbtypes.ProjectionTypeKeysOnly
		if ix.All {
			proj = ddbtypes.ProjectionTypeAll
		}
		indexes = append(indexes, ddbtypes.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: keys,
			Projection: &ddbtypes.Projection{ProjectionType: proj}})
	}
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:              aws.String(name),
		BillingMode:            ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions:   attrs,
		KeySchema:              []ddbtypes.KeySchemaElement{{AttributeName: aws.String(t.Key), KeyType: ddbtypes.KeyTypeHash}},
		GlobalSecondaryIndexes: indexes,
	})
	var inUse *ddbtypes.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second,
		func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 100 * time.Millisecond
			o.MaxDelay = time.Second
		}); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(schema.ExpiresAt), Enabled: aws.Bool(true)}}); err != nil {
		return fmt.Errorf("enable ttl on %s: %w", name, err)
	}
	return nil
}

func createQueue(ctx context.Context, c *sqs.Client, name string, attrs map[string]string) (url, arn string, err error) {
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "", fmt.Errorf("queue %s arn: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}
