package notify

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// confirm sends the confirmation of a reply (job.TaskReply, R-REPLY-5):
// the row the reply function wrote, carried through the same claim, send
// and mark as any email (deliver), so it is sent exactly once through
// redeliveries, crashes and lost answers, and settled by SES evidence
// like the rest. The reply function has no SES permission of its own.
// A suppressed address gets nothing; an unsubscribe or a mute does not
// stop it: it answers the reader's own request.
func (n *Notify) confirm(ctx context.Context, id string) error {
	r, err := n.Deliveries.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return retry.Permanent(retry.NotFound, fmt.Errorf("reply confirmation %s: %w", id, err))
	}
	if err != nil {
		return err
	}
	if r.Kind != delivery.KindReply {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("delivery %s is not a reply's confirmation", id))
	}
	if n.Recipients != nil && r.Status.Claimable() && r.NotificationID == "" && r.NotifiedAt.IsZero() && !r.HasEvidence() {
		rid := unsubscribe.RecipientID(r.Recipient)
		st, err := n.Recipients.Standings(ctx, []string{rid})
		if err != nil {
			return err
		}
		if st[rid].Suppressed {
			got, err := n.Deliveries.Skip(ctx, r.ID, delivery.StatusSuppressed, st[rid].Reason)
			if r, _, err = n.current(ctx, r.ID, got, err); err != nil {
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
