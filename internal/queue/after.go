package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// EnqueueAfter sends a stage message that becomes visible after delay (SQS
// DelaySeconds, capped at MaxDelay): the notify stage of a new version
// waits out the collapse window on its queue, not in a function
// (R-QUIET-3, R-STAGE-6), and intake coalesces the reviewer refreshes of
// one version into one message sent this way (R-BUDGET-3).
func (c *Client) EnqueueAfter(ctx context.Context, m job.Message, delay time.Duration) error {
	url, ok := c.urls.Queue[m.Stage]
	if !ok || url == "" {
		return fmt.Errorf("enqueue %s: no queue configured for stage %q", m.JobID, m.Stage)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode stage message: %w", err)
	}
	return c.Requeue(ctx, url, string(body), delay)
}
