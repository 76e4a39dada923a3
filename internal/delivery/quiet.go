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

// Reached reports whether the row's recipient has its version's content,
// as far as anyone can know now: the row was sent (SES accepted it, or an
// operator resolved it as sent), or it was settled because the recipient
// had that content already (same diff, nothing new) — and no verdict came
// after the send to undo it (Undone). It is the one predicate every
// decision that spares a reader an email rests on: a newer version that
// supersedes an older one (R-QUIET-3, through Carries and Judge), a diff
// they were mailed already (R-QUIET-1), a rerun with nothing new since a
// version they had (R-QUIET-2), a digest entry a newer version made moot
// (R-DIGEST-4).
//
// Why not "was sent": SES accepting a message is not the reader having
// it. SES may publish a Reject (it refused the content, a virus) or a
// Bounce after the Send event; a row so undone gave its reader nothing,
// and a decision that counted it would leave them with no email at all.
// A superseded row did not give its recipient anything either.
func (r Row) Reached() bool {
	if r.Undone() {
		return false
	}
	return !r.NotifiedAt.IsZero() || r.NotificationID != "" ||
		r.Status == StatusSkippedSameDiff || r.Status == StatusSkippedNothingNew
}

// Undone reports whether provider evidence says the row's send reached
// nobody: a Reject of its message, or a Bounce of it (permanent; or
// transient once the resends ran out — a transient bounce that is resent
// clears the row's evidence). A Complaint is not: the reader had the
// message, and said so.
func (r Row) Undone() bool { return !r.RejectedAt.IsZero() || !r.BouncedAt.IsZero() }

// Carries reports whether a row settled quietly as status may stand on r
// (Row.StandsOn): for superseded, r's recipient has r's version
// (Reached), or r was itself superseded by one that reached them or
// gathered into their daily digest, which carries it on (R-DIGEST-2) —
// what Judge counts as Reached; for the same diff and nothing new, r
// Reached. The store's SettleQuiet holds r to it in the same transaction
// that settles the row.
func (r Row) Carries(status Status) bool {
	if r.Reached() {
		return true
	}
	return status == StatusSuperseded && (r.Status == StatusSuperseded || r.Status == StatusDigested)
}
