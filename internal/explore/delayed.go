package explore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// EnqueueAfter implements pipeline.DelayedEnqueuer (SendMessage with
// DelaySeconds): notify's second look at rows waiting for a newer
// version (R-QUIET-3) becomes visible after the delay, a later tick.
func (q stageQueue) EnqueueAfter(ctx context.Context, m job.Message, d time.Duration) error {
	to, err := q.w.queueOf(m.Stage)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = call(q.w, ctx, wr("sqs.SendMessage", to.name), func() (struct{}, error) {
		to.add(q.w, to.name+"-"+q.w.name(ctx), string(b), d, time.Time{}, nil)
		return struct{}{}, nil
	})
	return err
}
