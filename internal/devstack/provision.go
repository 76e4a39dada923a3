package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store"
)

// MaxReceiveCount is the redrive policy's limit. The stage runner
// dead-letters on its own at attempt 5 (R-STAGE-3) with a full envelope;
// the redrive policy is only the safety net for a handler that crashes
// before it can, so it allows a few more receives.
const MaxReceiveCount = 10

// Resources names what Provision creates.
type Resources struct {
	JobsTable, DeliveriesTable, PayloadBucket string
	Queues                                    queue.URLs
	QueueARNs                                 map[job.Stage]string
	// The SES event path: topic → feedback queue (with its DLQ).
	EventsTopicARN, FeedbackQueue, FeedbackQueueARN, FeedbackDLQ string
}

// Provision creates the tables, the stage queues with their dead-letter
// queues and redrive policies, and the payload bucket, named with prefix.
// It is idempotent: existing resources are kept.
func Provision(ctx context.Context, c *Clients, prefix string) (Resources, error) {
	r := Resources{
		JobsTable: prefix + "-jobs", DeliveriesTable: prefix + "-deliveries", PayloadBucket: prefix + "-payloads",
		Queues: queue.URLs{Queue: map[job.Stage]string{}, DLQ: map[job.Stage]string{}}, QueueARNs: map[job.Stage]string{},
	}
	jobsAttrs, jobsIndex := store.JobsIndex()
	dirAttrs, dirIndex := store.DirectoryIndex()
	if err := createTable(ctx, c.DynamoDB, r.JobsTable, "pk", "expires_at", slices.Concat(jobsAttrs, dirAttrs), jobsIndex, dirIndex); err != nil {
		return r, err
	}
	rowAttrs, rowIndex := store.DeliveriesIndex()
	if err := createTable(ctx, c.DynamoDB, r.DeliveriesTable, "delivery_id", "expires_at", rowAttrs, rowIndex); err != nil {
		return r, err
	}
	for _, s := range job.Stages() {
		name := prefix + "-" + string(s)
		dlqURL, dlqARN, err := createQueue(ctx, c.SQS, name+"-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
		if err != nil {
			return r, err
		}
		redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(MaxReceiveCount)})
		url, arn, err := createQueue(ctx, c.SQS, name, map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": string(redrive)})
		if err != nil {
			return r, err
		}
		r.Queues.Queue[s], r.Queues.DLQ[s], r.QueueARNs[s] = url, dlqURL, arn
	}
	dlqURL, dlqARN, err := createQueue(ctx, c.SQS, prefix+"-feedback-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	if err != nil {
		return r, err
	}
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(MaxReceiveCount)})
	if r.FeedbackQueue, r.FeedbackQueueARN, err = createQueue(ctx, c.SQS, prefix+"-feedback", map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": string(redrive)}); err != nil {
		return r, err
	}
	r.FeedbackDLQ = dlqURL
	topic, err := c.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(prefix + "-ses-events")})
	if err != nil {
		return r, fmt.Errorf("create topic: %w", err)
	}
	r.EventsTopicARN = aws.ToString(topic.TopicArn)
	if _, err := c.SNS.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(r.FeedbackQueueARN), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		return r, fmt.Errorf("subscribe feedback queue: %w", err)
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

func createTable(ctx context.Context, db *dynamodb.Client, name, key, ttlAttr string, indexAttrs []ddbtypes.AttributeDefinition, indexes ...ddbtypes.GlobalSecondaryIndex) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: append([]ddbtypes.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			indexAttrs...),
		KeySchema:              []ddbtypes.KeySchemaElement{{AttributeName: aws.String(key), KeyType: ddbtypes.KeyTypeHash}},
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
	if ttlAttr != "" {
		if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(ttlAttr), Enabled: aws.Bool(true)}}); err != nil {
			return fmt.Errorf("enable ttl on %s: %w", name, err)
		}
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
