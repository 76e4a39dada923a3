package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/drain"
)

// Counts reads a queue's approximate counters (GetQueueAttributes): the
// drain check of the evidence path (internal/drain). A read: the SDK's
// own retries are safe.
func (c *Client) Counts(ctx context.Context, queueURL string) (drain.Counts, error) {
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return drain.Counts{}, fmt.Errorf("get queue attributes: %w", err)
	}
	var n drain.Counts
	for name, dst := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &n.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &n.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &n.Delayed,
	} {
		v, ok := out.Attributes[string(name)]
		if !ok {
			// A queue that does not report a counter cannot be shown empty.
			return drain.Counts{}, fmt.Errorf("get queue attributes: %s missing", name)
		}
		if *dst, err = strconv.Atoi(v); err != nil {
			return drain.Counts{}, fmt.Errorf("get queue attributes: %s=%q: %w", name, v, err)
		}
	}
	return n, nil
}
