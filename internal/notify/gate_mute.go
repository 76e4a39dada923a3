package notify

import (
	"context"
	"errors"

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

// MuteGate settles, without a send, the rows of recipients who muted the
// changelist by reply as skipped_muted (R-REPLY-7): every unsent row's
// recipient's mute read in one BatchGetItem. Other recipients of the
// changelist are mailed as before. A digest leaves out the changelists
// its reader muted too (mutedByReply).
type MuteGate struct{ mutes Mutes }

// NewMuteGate is the gate of the mutes kept in mutes.
func NewMuteGate(mutes Mutes) (*MuteGate, error) {
	if mutes == nil {
		return nil, errors.New("mute gate: no mutes to read (a deployment without replies lists no mute gate)")
	}
	return &MuteGate{mutes: mutes}, nil
}

func (*MuteGate) rank() int    { return 2 }
func (*MuteGate) name() string { return "mute" }

// decide reads the mutes of the run's unsent rows' recipients. Version 1,
// a changelist's first (versions start at 1), costs no read, as
// readDismissed's reasoning goes: a mute comes from a reply to an email
// of the changelist, so a reader with one has their row of that version
// already.
func (g *MuteGate) decide(ctx context.Context, run *Run) (decider, error) {
	j := run.Job
	if j.ReviewVersion <= 1 {
		return nil, nil
	}
	var ids []string
	for _, r := range run.Rows {
		if r.Unsent() {
			ids = append(ids, unsubscribe.RecipientID(r.Recipient))
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	muted, err := g.mutes.Muted(ctx, job.ChangelistKey(j.Source, j.ChangelistID), ids)
	if err != nil {
		return nil, err
	}
	return func(r delivery.VersionRow) Decision {
		if !muted[unsubscribe.RecipientID(r.Recipient)] {
			return Decision{}
		}
		return Decision{Status: delivery.StatusSkippedMuted, Reason: skipReasonMuted,
			then: func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error) {
				run.log.InfoContext(ctx, "recipient muted the changelist by reply; delivery skipped", "delivery_id", got.ID, "job_id", j.ID)
				obs.Metric(ctx, run.log, map[string]string{"Source": j.Source}, map[string]float64{"SkippedMuted": 1})
				return got, nil
			}}
	}, nil
}
