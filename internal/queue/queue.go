// Package queue is the SQS adapter: sending stage messages, dead-letter
// envelopes, and changing a message's visibility for backoff.
package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
)

// URLs names each stage's queue and dead-letter queue.
type URLs = config.Queues

// NewSQS returns an SQS client from the SDK config, at endpoint when set
// (the local emulator). The SDK retries its calls: see awsclient/retry.go.
func NewSQS(cfg aws.Config, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// Client sends to the stage queues.
type Client struct {
	sqs  *sqs.Client
	urls URLs
}

// New returns a queue client over the given URLs.
func New(c *sqs.Client, urls URLs) *Client { return &Client{sqs: c, urls: urls} }

// SQS exposes the underlying client for the local runner and the CLI.
func (c *Client) SQS() *sqs.Client { return c.sqs }

// URLs returns the configured queue URLs.
func (c *Client) URLs() URLs { return c.urls }

// Enqueue sends a stage message for a job to that stage's queue.
func (c *Client) Enqueue(ctx context.Context, m job.Message) error {
	url, ok := c.urls.Queue[m.Stage]
	if !ok || url == "" {
		return fmt.Errorf("enqueue %s: no queue configured for stage %q", m.JobID, m.Stage)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode stage message: %w", err)
	}
	return c.SendRaw(ctx, url, string(body))
}

// SendRaw sends a body to a queue URL.
func (c *Client) SendRaw(ctx context.Context, url, body string) error {
	_, err := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	return nil
}

// DeadLetter sends an envelope body to a stage's dead-letter queue.
func (c *Client) DeadLetter(ctx context.Context, stage job.Stage, body []byte) error {
	url, ok := c.urls.DLQ[stage]
	if !ok || url == "" {
		return fmt.Errorf("dead-letter: no DLQ configured for stage %q", stage)
	}
	return c.SendRaw(ctx, url, string(body))
}

// Delay hides a received message for d, the backoff before its next attempt
// (R-STAGE-2, applied with ChangeMessageVisibility).
func (c *Client) Delay(ctx context.Context, queueURL, receiptHandle string, d time.Duration) error {
	secs := int32(d.Round(time.Second) / time.Second)
	secs = max(0, min(secs, 43200)) // SQS's limit: 12 hours
	_, err := c.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: secs,
	})
	if err != nil {
		return fmt.Errorf("sqs change visibility: %w", err)
	}
	return nil
}

// MaxDelay is the longest SQS DelaySeconds (15 minutes).
const MaxDelay = 15 * time.Minute

// Requeue sends body to queueURL, invisible for delay (SQS DelaySeconds,
// rounded up to whole seconds and capped at MaxDelay). The stage runner
// uses it to defer a rate-limited message as a fresh copy, whose receive
// count starts again at 1.
func (c *Client) Requeue(ctx context.Context, queueURL, body string, delay time.Duration) error {
	secs := int32(min(max(delay, 0), MaxDelay).Seconds() + 0.999)
	secs = min(secs, int32(MaxDelay/time.Second))
	_, err := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body), DelaySeconds: secs})
	if err != nil {
		return fmt.Errorf("sqs send (requeue): %w", err)
	}
	return nil
}

// Delete removes a received message.
func (c *Client) Delete(ctx context.Context, queueURL, receiptHandle string) error {
	_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(receiptHandle)})
	if err != nil {
		return fmt.Errorf("sqs delete: %w", err)
	}
	return nil
}

// Receive long-polls a queue for up to max messages, asking for the
// attributes Lambda's event source mapping passes to handlers.
func (c *Client) Receive(ctx context.Context, queueURL string, max int32, wait time.Duration) ([]types.Message, error) {
	out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queueURL), MaxNumberOfMessages: max, WaitTimeSeconds: int32(wait / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	return out.Messages, nil
}
