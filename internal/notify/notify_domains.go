package notify

import (
	"context"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
)

// skipReasonDomain is the skip reason of a skipped_domain row.
const skipReasonDomain = "domain"

// gateDomains settles, without a send, the rows of addresses whose domain
// the operator does not allow (R-RECIPIENT-1) as skipped_domain, whoever
// disclosed the address: the webhook's recipients, a source's API, the
// reviewer directory. Like gate it touches only rows never sent, so a row
// in flight or sent keeps its course; the rows of reviewers without an
// address are terminal already, and evidence probes are not rows. Each
// row it settles is counted once, in SkippedDomain. rows is updated in
// place.
func (n *Notify) gateDomains(ctx context.Context, j job.Job, rows []delivery.Row) error {
	if !n.AllowedDomains.On() {
		return nil
	}
	for i, r := range rows {
		if !r.Status.Claimable() || r.NotificationID != "" || !r.NotifiedAt.IsZero() || r.HasEvidence() ||
			n.AllowedDomains.Allows(r.Recipient) {
			continue
		}
		got, err := n.Deliveries.Skip(ctx, r.ID, delivery.StatusSkippedDomain, skipReasonDomain)
		// Claimed or settled since we read it: take it as it is now.
		got, _, err = n.current(ctx, r.ID, got, err)
		if err != nil {
			return err
		}
		rows[i] = got
		if got.Status == delivery.StatusSkippedDomain {
			n.Log.InfoContext(ctx, "recipient's domain is not allowed; delivery skipped", "delivery_id", r.ID, "job_id", j.ID)
			obs.Metric(ctx, n.Log, map[string]string{"Source": j.Source}, map[string]float64{"SkippedDomain": 1})
		}
	}
	return nil
}
