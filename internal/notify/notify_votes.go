package notify

import (
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/vote"
)

// voteLinks mints the vote links of one email's findings (R-VOTE-1):
// signed for the delivery id (never the address), expiring
// vote.LinkLifetime after the email is rendered. Nil when links are off,
// so the email has none.
func (n *Notify) voteLinks(deliveryID string, now time.Time) func(critic.Finding) (string, string) {
	if n.Votes == nil || n.PublicURL == "" {
		return nil
	}
	expires := now.Add(vote.LinkLifetime)
	return func(f critic.Finding) (string, string) {
		return n.Votes.Links(n.PublicURL, deliveryID, f, expires)
	}
}

// ReplyAddresses mints a delivery's reply address (inbound.Keys).
type ReplyAddresses interface {
	Address(domain, deliveryID string, expires time.Time) (string, error)
}

// replyTo is the Reply-To of the email of deliveryID rendered at now
// (R-REPLY-1): its reply address, valid as long as its vote links; ""
// when replies are off.
func (n *Notify) replyTo(deliveryID string, now time.Time) string {
	if n.Replies == nil || n.InboundDomain == "" {
		return ""
	}
	addr, err := n.Replies.Address(n.InboundDomain, deliveryID, now.Add(vote.LinkLifetime))
	if err != nil {
		n.Log.Warn("no reply address for the email; it has no Reply-To", "delivery_id", deliveryID, "error", err)
		return ""
	}
	return addr
}
