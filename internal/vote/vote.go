package vote

import "time"

// Vote is one reader's say on one finding of one email: the latest choice
// made through that email's links for that finding. Keyed by (DeliveryID,
// FindingID), so a link clicked again, or on another device, or the other
// link of the pair, leaves one vote.
type Vote struct {
	DeliveryID string    `json:"delivery_id"`
	FindingID  string    `json:"finding_id"`
	Choice     Choice    `json:"choice"`
	Rule       string    `json:"rule"`
	VotedAt    time.Time `json:"voted_at"`
}

// Outcome is what recording a vote did.
type Outcome string

const (
	// Recorded: the first vote on this finding of this email.
	Recorded Outcome = "recorded"
	// Changed: the reader changed their mind; the latest choice replaced
	// the earlier one, still one vote.
	Changed Outcome = "changed"
	// Repeat: the same choice again (a second click, another device);
	// nothing changed.
	Repeat Outcome = "repeat"
)

// FromClaims is the vote a verified link records at now.
func FromClaims(c Claims, now time.Time) Vote {
	return Vote{DeliveryID: c.DeliveryID, FindingID: c.FindingID, Choice: c.Choice, Rule: c.Rule, VotedAt: now.UTC()}
}
