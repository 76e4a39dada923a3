package delivery

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// The daily digest is a delivery row like any other (R-DIGEST-1): keyed by
// a deterministic id, claimed under a lease, sent with that id as the SES
// tag, marked in one write, settled from provider evidence when an answer
// is lost. What is its own is before the claim: it is created open, and
// gathers the version rows of its recipient's critiques (their entries)
// until it is due; notify then closes it — renders its message once from
// what it gathered, in one conditional write that fails if an entry came
// in meanwhile — and the outbox takes it from there.
//
//	version row: pending ─► digested (names its digest; terminal, never sent itself)
//	digest row:  open ─close─► pending ─claim─► sending ─► sent … (as every row)
//	                 └─close─► skipped_empty, suppressed, skipped_unsubscribed (terminal, never sent)
//
// The values are stored; never rename one.
const (
	// StatusDigested: the version went into the recipient's daily digest
	// (Row.Digest names the digest row, SkipReason its period) instead of
	// an email of its own. Terminal: the digest row carries the promise.
	StatusDigested Status = "digested"
	// StatusOpen: a digest row still gathering entries; it is closed when
	// due, never claimed before.
	StatusOpen Status = "open"
	// StatusSkippedEmpty: a digest row closed with nothing left to show
	// (every changelist it gathered muted or superseded since): terminal,
	// never sent.
	StatusSkippedEmpty Status = "skipped_empty"
)

// DigestStatuses are the statuses of R-DIGEST-*.
func DigestStatuses() []Status { return []Status{StatusDigested, StatusOpen, StatusSkippedEmpty} }

// digestPrefix starts every digest row's id; "d_" starts a version's.
const digestPrefix = "g_"

// DigestID is the id of recipient's digest due at due: the delivery key, the
// SES tag and the X-Criticizer-Delivery-Id header of that digest, the same
// for every notifier that computes it. It starts with the due time in
// Unix seconds, so that a sweep can tell a due digest from its key alone
// (store.Deliveries.DueDigests reads only the keys of the open ones), then
// a digest of the recipient and that time: one digest per recipient and
// period, a period being the moment it is due (R-DIGEST-2).
func DigestID(recipient string, due time.Time) string {
	sec := strconv.FormatInt(due.Unix(), 10)
	return JoinDigestID(due, job.Hash("digest", NormalizeRecipient(recipient), sec))
}

// JoinDigestID is the digest id of its two parts, the due time and the
// digest of the recipient and that time (SplitDigestID's inverse): a
// reply key carries the parts (internal/inbound).
func JoinDigestID(due time.Time, digest string) string {
	return digestPrefix + strconv.FormatInt(due.Unix(), 10) + "_" + digest
}

// DigestDue is the due time a digest id names; ok is false for an id that
// is not a digest's.
func DigestDue(id string) (time.Time, bool) {
	due, _, ok := SplitDigestID(id)
	return due, ok
}

// SplitDigestID is a digest id's due time and digest; ok is false for an
// id that is not a digest's.
func SplitDigestID(id string) (due time.Time, digest string, ok bool) {
	rest, ok := strings.CutPrefix(id, digestPrefix)
	if !ok {
		return time.Time{}, "", false
	}
	sec, digest, ok := strings.Cut(rest, "_")
	if !ok {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.Unix(n, 0).UTC(), digest, true
}

// IsDigest reports whether the row is a digest's rather than a version's.
func (r Row) IsDigest() bool { return strings.HasPrefix(r.ID, digestPrefix) }

// DigestReason is the SkipReason of a version row gathered into the
// digest of period (its local date).
func DigestReason(period string) string { return "daily digest of " + period }

// HasEntry reports whether a digest row gathered the version row id.
func (r Row) HasEntry(id string) bool { return slices.Contains(r.Entries, id) }

// AwaitsClose reports whether a digest row is still the sweeper's to hand
// to notify when due: open, or closed and never claimed. Once claimed it
// is a row in flight like any other (Unsettled).
func (r Row) AwaitsClose() bool {
	return r.IsDigest() && r.Attempts == 0 && (r.Status == StatusOpen || r.Status.Claimable())
}

// NotifyMessage is the notify stage message that carries the row on: its
// job's, for a digest row the digest's own (job.TaskDigest), for a
// reply's confirmation the reply task naming the row (job.TaskReply). The
// sweeper, the feedback function and an operator's verdict hand rows back
// to notify with it.
func (r Row) NotifyMessage() job.Message {
	switch {
	case r.IsDigest():
		return DigestMessage(r.ID)
	case r.Kind == KindReply:
		return job.Message{JobID: r.JobID, Stage: job.StageNotify, Task: job.TaskReply, Delivery: r.ID}
	}
	return job.Message{JobID: r.JobID, Stage: job.StageNotify}
}

// DigestMessage is the notify message that closes and sends digest id.
func DigestMessage(id string) job.Message {
	return job.Message{JobID: job.ID(id), Stage: job.StageNotify, Task: job.TaskDigest}
}

// digestFindingSep joins a digest's finding to the version row it is
// recorded on: neither a delivery id nor a finding id holds it.
const digestFindingSep = "/"

// DigestFinding is how a digest's message lists a finding
// (Message.Findings): the version row the digest gathered, whose email it
// stands for, and the finding's id (vote.FindingID). A digest spans many
// changelists and versions, so its number names both (R-DIGEST-6).
func DigestFinding(deliveryID, findingID string) string {
	return deliveryID + digestFindingSep + findingID
}

// SplitDigestFinding is DigestFinding's inverse; ok is false for a
// critique email's entry (a finding id alone).
func SplitDigestFinding(entry string) (deliveryID, findingID string, ok bool) {
	return strings.Cut(entry, digestFindingSep)
}
