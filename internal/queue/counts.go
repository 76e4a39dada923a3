package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/drain"
)

// Counts reads a queue's approximate counters (GetQueueAttributes): the
// drain check of the evidence path (internal/drain); with them, in the
// same call, the visibility timeout and the redrive policy's
// maxReceiveCount, which bound how long a message can stay in the queue
// unseen. A read: the SDK's own retries are safe.
func (c *Client) Counts(ctx context.Context, queueURL string) (drain.Counts, error) {
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameRedrivePolicy}})
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
	if v, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)]); err == nil && v > 0 {
		n.VisibilityTimeout = time.Duration(v) * time.Second
	}
	if p := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; p != "" {
		// maxReceiveCount is a number in AWS's answer and a string in
		// some emulators' (and in what callers set).
		var rp struct {
			MaxReceiveCount json.Number `json:"maxReceiveCount"`
		}
		if json.Unmarshal([]byte(p), &rp) == nil {
			if v, err := strconv.Atoi(rp.MaxReceiveCount.String()); err == nil && v > 0 {
				n.MaxReceiveCount = v
			}
		}
	}
	return n, nil
}
