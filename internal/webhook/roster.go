package webhook

import (
	"strconv"
	"strings"
	"time"
)

// RosterChange is what a webhook says about who reviews a changelist
// (R-REVIEWERS-1, R-REVIEWERS-2): reviewers requested or removed, reviews
// submitted, and when, by the code review system's clock. Usernames are
// validated like every login (no spaces, no "@").
type RosterChange struct {
	Requested []string
	// Teams are requested teams (GitHub slugs): the fetch stage expands
	// them to their members.
	Teams    []string
	Removed  []string
	Reviewed []string
	// AddedUnnamed: a reviewer was added whom the payload names by
	// address only (Gerrit): not in the roster, but someone new to ask.
	AddedUnnamed bool
	At           time.Time
}

// Added reports whether the change asks someone new to review.
func (c *RosterChange) Added() bool {
	return c != nil && (len(c.Requested)+len(c.Teams) > 0 || c.AddedUnnamed)
}

// eventTime reads a timestamp a code review system put in a payload:
// RFC 3339 (GitHub, GitLab) or GitLab's older "2006-01-02 15:04:05 UTC".
// A missing or unreadable one is the zero time: intake uses its own clock.
func eventTime(v *string) time.Time {
	if v == nil {
		return time.Time{}
	}
	s := strings.TrimSpace(*v)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// unixSeconds reads Gerrit's eventCreatedOn (seconds since the epoch,
// sent as a number or a string).
func unixSeconds(raw []byte) time.Time {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}
