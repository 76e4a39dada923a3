package notify

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// confirm sends the confirmation of a reply (job.TaskReply, R-REPLY-5):
// the row the reply function wrote, carried through the same claim, send
// and mark as any email (deliver), so it is sent exactly once through
// redeliveries, crashes and lost answers, and settled by SES evidence
// like the rest. The reply function has no SES permission of its own.
// The reply gate answers it first (gate_reply.go), with the settle loop's
// one conditional write.
func (n *Notify) confirm(ctx context.Context, id string) error {
	r, err := n.Deliveries.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return retry.Permanent(retry.NotFound, fmt.Errorf("reply confirmation %s: %w", id, err))
	}
	if err != nil {
		return err
	}
	reply, err := delivery.AsReply(r)
	if err != nil {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("delivery %s is not a reply's confirmation", id))
	}
	if g := n.Gates.reply; g != nil && reply.Unsent() {
		d, err := g.decide(ctx, reply)
		if err != nil {
			return err
		}
		if d.Status != "" {
			if r, err = n.settleRow(ctx, r, d); err != nil {
				return err
			}
		}
	}
	r, err = n.deliver(ctx, r, &evidenceView{n: n})
	if err == nil && r.Status == delivery.StatusSent {
		n.Log.InfoContext(ctx, "reply confirmation sent", "delivery_id", r.ID, "job_id", r.JobID)
	}
	return err
}
