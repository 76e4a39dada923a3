package delivery

import "github.com/criticizer/criticizer/internal/prefs"

// Standing is what Criticizer knows about a recipient before it sends:
// whether the address is suppressed (a permanent bounce or a complaint, from
// SES events) and what the recipient chose (their preference record: the
// repositories they muted, whether they left every email, their minimum
// severity and delivery mode). The notifier reads it once per job, for all
// of the job's recipients, in one read.
type Standing struct {
	// Suppressed: SES reported a permanent bounce or a complaint (or that the
	// address is on its suppression list); never send to it again.
	Suppressed bool
	// Reason is the suppression's cause: "bounce" or "complaint".
	Reason string
	// Preferences is the recipient's preference record (prefs.Default
	// normalized for a recipient who never chose anything).
	Preferences prefs.Preferences
}

// SkipAs reports the terminal status a row for repository takes instead of
// a send, if any. Suppression wins over an unsubscribe: it is about the
// address, not the reader's wishes, and operators triage it differently
// (the delivery lifecycle: "suppressed (from webhook)", "skipped_unsubscribed").
// A muted repository and leaving every email are both the reader's
// unsubscribe (R-UNSUB-2).
func (s Standing) SkipAs(repository string) (Status, bool) {
	if s.Suppressed {
		return StatusSuppressed, true
	}
	if s.Preferences.Stops(repository) {
		return StatusSkippedUnsubscribed, true
	}
	return "", false
}
