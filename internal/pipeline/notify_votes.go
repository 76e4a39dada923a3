package pipeline

import (
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/vote"
)

// voteLinks mints the feedback links of one email's findings (R-VOTE-1):
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
