package delivery

import "slices"

// Statuses of a row settled quietly: the recipient would have learned
// nothing from the email (R-QUIET-1, R-QUIET-2, R-QUIET-3). Each is
// terminal, never sent, and counts as settled when the job is finalized,
// like skipped_unsubscribed. The values are stored; never rename one.
const (
	// StatusSkippedSameDiff: the recipient was already mailed a version of
	// the changelist whose diff has the same content (SkipReason names it,
	// "same diff as v2"), whatever the commit.
	StatusSkippedSameDiff Status = "skipped_same_diff"
	// StatusSkippedNothingNew: a rerun compared with a version the
	// recipient was mailed found no new finding and resolved none.
	StatusSkippedNothingNew Status = "skipped_nothing_new"
	// StatusSuperseded: a newer version of the changelist was accepted
	// before this row was sent; its email goes out instead.
	StatusSuperseded Status = "superseded"
)

// QuietStatuses are the statuses of R-QUIET-1..3.
func QuietStatuses() []Status {
	return []Status{StatusSkippedSameDiff, StatusSkippedNothingNew, StatusSuperseded}
}

// Quiet reports whether s is one of QuietStatuses.
func (s Status) Quiet() bool { return slices.Contains(QuietStatuses(), s) }

// Unsent reports whether the row carries no sign of a send and may still be
// claimed: the only rows a decision taken before the claim (an unsubscribe,
// R-QUIET-*) may settle. A row in `sending`, or with a notification id,
// notified_at or provider evidence, keeps its course.
func (r Row) Unsent() bool {
	return r.Status.Claimable() && r.NotificationID == "" && r.NotifiedAt.IsZero() && !r.HasEvidence()
}

// HasContent reports whether the row's recipient has had its version's
// content: the row was sent (or is held as sent), or it was settled
// because the recipient had that content already (same diff, nothing
// new). A later version with the same content is then news to nobody.
// A superseded row did not give its recipient anything.
func (r Row) HasContent() bool {
	return !r.NotifiedAt.IsZero() || r.NotificationID != "" ||
		r.Status == StatusSkippedSameDiff || r.Status == StatusSkippedNothingNew
}
