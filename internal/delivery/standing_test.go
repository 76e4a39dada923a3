package delivery

import (
	"testing"

	"github.com/criticizer/criticizer/internal/prefs"
)

// The standings that settle a row without a send: suppressed, skipped_unsubscribed.
// Suppression wins; an unsubscribe is per repository (a mute) unless it is
// from all.
// Rules: R-UNSUB-2.
func TestStanding_SkipAs(t *testing.T) {
	for _, c := range []struct {
		name string
		st   Standing
		want Status
		skip bool
	}{
		{"nothing known", Standing{}, "", false},
		{"suppressed", Standing{Suppressed: true, Reason: "bounce"}, StatusSuppressed, true},
		{"suppressed and unsubscribed", Standing{Suppressed: true, Preferences: prefs.Preferences{UnsubscribedAll: true}}, StatusSuppressed, true},
		{"left everything", Standing{Preferences: prefs.Preferences{UnsubscribedAll: true}}, StatusSkippedUnsubscribed, true},
		{"muted this repository", Standing{Preferences: prefs.Preferences{Muted: []string{"github:o/r", "github:o/x"}}}, StatusSkippedUnsubscribed, true},
		{"muted another repository", Standing{Preferences: prefs.Preferences{Muted: []string{"github:o/x"}}}, "", false},
	} {
		got, skip := c.st.SkipAs("github:o/r")
		if got != c.want || skip != c.skip {
			t.Errorf("%s: SkipAs = %q, %v; want %q, %v", c.name, got, skip, c.want, c.skip)
		}
		if skip && !got.Done() {
			t.Errorf("%s: %q is not terminal", c.name, got)
		}
	}
}
