package delivery

// Standing is what Criticizer knows about a recipient before it sends:
// whether the address is suppressed (a permanent bounce or a complaint, from
// SES events) and which scopes the recipient unsubscribed from. The notifier
// reads it once per job, for all of the job's recipients.
type Standing struct {
	// Suppressed: SES reported a permanent bounce or a complaint (or that the
	// address is on its suppression list); never send to it again.
	Suppressed bool
	// Reason is the suppression's cause: "bounce" or "complaint".
	Reason string
	// UnsubscribedAll: the recipient left every Criticizer email.
	UnsubscribedAll bool
	// Repositories the recipient left, by unsubscribe.Repository key.
	Repositories []string
}

// SkipAs reports the terminal status a row for repository takes instead of
// a send, if any. Suppression wins over an unsubscribe: it is about the
// address, not the reader's wishes, and operators triage it differently
// (the delivery lifecycle: "suppressed (from webhook)", "skipped_unsubscribed").
func (s Standing) SkipAs(repository string) (Status, bool) {
	if s.Suppressed {
		return StatusSuppressed, true
	}
	if s.UnsubscribedAll {
		return StatusSkippedUnsubscribed, true
	}
	for _, r := range s.Repositories {
		if r == repository {
			return StatusSkippedUnsubscribed, true
		}
	}
	return "", false
}
