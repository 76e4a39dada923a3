package notify

import (
	"context"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Mutes reads which recipients muted a changelist by replying "mute"
// (store.Mutes).
type Mutes interface {
	Muted(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]bool, error)
}

// skipReasonMuted is the skip reason of a skipped_muted row.
const skipReasonMuted = "reply"

// gateMuted settles, without a send, the rows of recipients who muted
// the changelist by reply as skipped_muted (R-REPLY-7): every recipient's
// mute read in one BatchGetItem, and, like gate, only rows never sent are
// touched. Other recipients of the changelist are mailed as before. rows
// is updated in place. Version 1, a changelist's first (versions start at
// 1), costs no read, as readDismissed's reasoning goes: a mute comes from
// a reply to an email of the changelist, so a reader with one has their
// row of that version already.
func (n *Notify) gateMuted(ctx context.Context, j job.Job, rows []delivery.Row) error {
	if n.Mutes == nil || j.ReviewVersion <= 1 {
		return nil
	}
	unsent := func(r delivery.Row) bool {
		return r.Status.Claimable() && r.NotificationID == "" && r.NotifiedAt.IsZero() && !r.HasEvidence()
	}
	var ids []string
	for _, r := range rows {
		if unsent(r) {
			ids = append(ids, unsubscribe.RecipientID(r.Recipient))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	muted, err := n.Mutes.Muted(ctx, job.ChangelistKey(j.Source, j.ChangelistID), ids)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if !unsent(r) || !muted[unsubscribe.RecipientID(r.Recipient)] {
			continue
		}
		got, err := n.Deliveries.Skip(ctx, r.ID, delivery.StatusSkippedMuted, skipReasonMuted)
		// Claimed or settled since we read it: take it as it is now.
		got, _, err = n.current(ctx, r.ID, got, err)
		if err != nil {
			return err
		}
		rows[i] = got
		if got.Status == delivery.StatusSkippedMuted {
			n.Log.InfoContext(ctx, "recipient muted the changelist by reply; delivery skipped", "delivery_id", r.ID, "job_id", j.ID)
			obs.Metric(ctx, n.Log, map[string]string{"Source": j.Source}, map[string]float64{"SkippedMuted": 1})
		}
	}
	return nil
}
