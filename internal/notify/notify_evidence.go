package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// awaitingEvidence is the failure of a row whose send may have happened:
// held for provider evidence, looked at again after the given wait (at
// least a second). The stage defers it without spending an attempt.
func awaitingEvidence(id string, after time.Duration, cause error) error {
	return retry.WithRetryAfter(retry.Transient(retry.AwaitingEvidence,
		fmt.Errorf("delivery %s: send may have happened; awaiting provider evidence: %w", id, cause)), max(after, time.Second))
}

// evidenceView reads the evidence path at most once per notify run.
type evidenceView struct {
	n    *Notify
	read bool
	st   store.EvidenceState
	err  error
}

func (v *evidenceView) get(ctx context.Context) (delivery.Evidence, error) {
	if v.n.Evidence == nil {
		return delivery.Evidence{Bound: v.n.Margin, Policy: v.n.Policy}, nil
	}
	if !v.read {
		v.st, v.err = v.n.Evidence.State(ctx, v.n.ConfigurationSet)
		v.read = v.err == nil
	}
	return delivery.Evidence{Newest: v.st.Newest, Drained: v.st.Drained, Bound: v.n.Margin, Policy: v.n.Policy}, v.err
}

// reconcile settles a row whose send may have happened (delivery.Settle):
// from provider evidence on the row, backfilled as sent without a resend;
// once the evidence path has caught up past the send with no event naming
// the row, released to be sent again; otherwise held, never resent.
func (n *Notify) reconcile(ctx context.Context, r delivery.Row, view *evidenceView) (delivery.Row, error) {
	ev, err := view.get(ctx)
	if err != nil {
		return r, err
	}
	switch delivery.Settle(r, ev) {
	case delivery.Backfill:
		at, id := r.SendEventAt, cmp.Or(r.NotificationID, r.ProviderMessageID)
		if at.IsZero() {
			at = n.Now()
		}
		n.Log.InfoContext(ctx, "provider evidence found; backfilling without resending", "delivery_id", r.ID)
		row, err := n.Deliveries.Backfill(ctx, r.ID, id, at)
		row, _, err = n.current(ctx, r.ID, row, err)
		return row, err
	case delivery.Resend:
		row, err := n.Deliveries.Requeue(ctx, r.ID, string(retry.AwaitingEvidence))
		row, lost, err := n.current(ctx, r.ID, row, err)
		if err == nil && !lost {
			obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"ResentWithoutEvidence": 1})
			n.Log.WarnContext(ctx, "the evidence path caught up past a send whose answer was lost, and no event names it; sending again",
				"delivery_id", r.ID, "job_id", r.JobID, "sent_by", r.SentBy(), "newest_event", ev.Newest, "drained", ev.Drained)
		}
		return row, err
	case delivery.Withhold:
		// The operator chose to hold uncertain sends: never resent without
		// evidence. The row waits for its events (a later look backfills
		// it) or for an operator; HeldDeliveries and EvidenceLag say so.
		if _, err := n.Deliveries.Awaiting(ctx, r.ID); err != nil && !errors.Is(err, store.ErrConflict) {
			n.Log.WarnContext(ctx, "could not note the wait on the row", "delivery_id", r.ID, "error", err)
		}
		n.Log.WarnContext(ctx, "the evidence path caught up past a send whose answer was lost and no event names it; held, not resent (hold policy): settle it with criticizer deliveries resolve or requeue",
			"delivery_id", r.ID, "job_id", r.JobID, "sent_by", r.SentBy())
		return r, awaitingEvidence(r.ID, min(max(n.Margin/4, time.Second), 30*time.Second),
			fmt.Errorf("held under the hold policy: no evidence names the send of %s", r.SentBy().UTC().Format(time.RFC3339)))
	}
	// Await: the evidence path has not caught up past the send.
	if _, err := n.Deliveries.Awaiting(ctx, r.ID); err != nil && !errors.Is(err, store.ErrConflict) {
		n.Log.WarnContext(ctx, "could not note the wait on the row", "delivery_id", r.ID, "error", err)
	}
	sent, now := r.SentBy(), n.Now()
	wait := sent.Add(n.Margin).Sub(now)
	if wait <= 0 {
		// Past the bound and still behind. If no event newer than the
		// send was recorded, nothing else may be flowing: a probe's events
		// show the path works. It is sent a little after the send, so that
		// an event clock coarser than ours (the local emulator's is in
		// seconds) still puts it past. The drain time is the sweeper's to
		// move (internal/drain).
		if ev.Newest.Before(sent) && now.After(sent.Add(probeSlack)) {
			n.probe(ctx, sent.Add(probeSlack))
		}
		wait = min(max(n.Margin/4, time.Second), 30*time.Second)
	}
	return r, awaitingEvidence(r.ID, wait, fmt.Errorf("evidence path not caught up past %s (newest event %s, drained %s)",
		sent.UTC().Format(time.RFC3339), ev.Newest.UTC().Format(time.RFC3339), ev.Drained.UTC().Format(time.RFC3339)))
}

// probeSlack is how long after the moment it must pass a probe is sent.
const probeSlack = time.Second

// probeEvery is how often probes may go while the evidence path stays
// behind (their events lost, or the path down): ProbeEvery, else twice the
// margin but at least 10 s.
func (n *Notify) probeEvery() time.Duration {
	if n.ProbeEvery > 0 {
		return n.ProbeEvery
	}
	return max(2*n.Margin, 10*time.Second)
}

func (n *Notify) forgetProbe(ctx context.Context) {
	if err := n.Evidence.ForgetProbe(ctx, n.ConfigurationSet); err != nil {
		n.Log.WarnContext(ctx, "could not forget a probe that was not sent", "error", err)
	}
}

// probe sends an evidence probe when one is needed to move the newest event time
// past need and none that would serves is on its way.
func (n *Notify) probe(ctx context.Context, need time.Time) {
	if n.Prober == nil || n.Evidence == nil {
		return
	}
	ok, err := n.Evidence.ClaimProbe(ctx, n.ConfigurationSet, need, n.probeEvery())
	if err != nil || !ok {
		return
	}
	if n.Pacer != nil {
		if err := n.Pacer.Wait(ctx); err != nil {
			n.Log.WarnContext(ctx, "evidence probe not sent: no room in the send rate", "error", err)
			n.forgetProbe(ctx)
			return
		}
	}
	id := n.token(ctx)
	msgID, err := n.Prober.SendProbe(ctx, id)
	if err != nil {
		// The next notifier to look may probe again at once: a second
		// probe costs one message to the mailbox simulator, a missing one
		// holds the row for ProbeEvery.
		n.Log.WarnContext(ctx, "evidence probe failed", "error", err)
		n.forgetProbe(ctx)
		return
	}
	obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"EvidenceProbes": 1})
	n.Log.InfoContext(ctx, "evidence probe sent", "probe_id", id, "provider_message_id", msgID)
}
