package notify

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/obs"
)

// skipReasonDomain is the skip reason of a skipped_domain row.
const skipReasonDomain = "domain"

// DomainGate settles, without a send, the rows of addresses whose domain
// the operator does not allow (R-RECIPIENT-1) as skipped_domain, whoever
// disclosed the address: the webhook's recipients, a source's API, the
// reviewer directory. The rows of reviewers without an address are
// terminal already, and evidence probes are not rows. Each row it
// settles is counted once, in SkippedDomain. A digest closed for a
// reader whose domain is no longer allowed is sent to nobody either
// (closeDigest).
type DomainGate struct{ allowed delivery.Domains }

// NewDomainGate is the gate of the allowed domains
// (CRITICIZER_ALLOWED_RECIPIENT_DOMAINS); a deployment that allows every
// domain lists no domain gate.
func NewDomainGate(allowed delivery.Domains) (*DomainGate, error) {
	if !allowed.On() {
		return nil, errors.New("domain gate: no allowed domains (every domain is allowed: list no domain gate)")
	}
	return &DomainGate{allowed: allowed}, nil
}

func (*DomainGate) rank() int    { return 0 }
func (*DomainGate) name() string { return "domain" }

// Allows reports whether mail may go to addr.
func (g *DomainGate) Allows(addr string) bool { return g.allowed.Allows(addr) }

func (g *DomainGate) decide(_ context.Context, run *Run) (decider, error) {
	j := run.Job
	return func(r delivery.VersionRow) Decision {
		if g.allowed.Allows(r.Recipient) {
			return Decision{}
		}
		return Decision{Status: delivery.StatusSkippedDomain, Reason: skipReasonDomain,
			then: func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error) {
				run.log.InfoContext(ctx, "recipient's domain is not allowed; delivery skipped", "delivery_id", got.ID, "job_id", j.ID)
				obs.Metric(ctx, run.log, map[string]string{"Source": j.Source}, map[string]float64{"SkippedDomain": 1})
				return got, nil
			}}
	}, nil
}
