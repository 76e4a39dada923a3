package delivery

import (
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// One stored row, three kinds of row: a version's email to one
// recipient, a reader's daily digest, a reply's confirmation. They share
// the outbox from the claim on (the same claim, send, mark and evidence),
// and the stored layout (Row), but not what comes before: a version row
// is gated and may go into a digest, a digest gathers entries and is
// closed, a reply's confirmation answers its reader. The notifier takes
// each as its own type, so that a digest is never gated as a version nor
// a version closed as a digest; Row is what the store reads and writes.
//
// Each embeds the stored row it is (its fields read as they are); the
// As* conversions check the kind, the constructors build a new row of
// the kind.

// VersionRow is a review version's row for one recipient (delivery.ID).
type VersionRow struct{ Row }

// DigestRow is a reader's daily digest (DigestID, R-DIGEST-*).
type DigestRow struct{ Row }

// ReplyRow is the confirmation of a reply (KindReply, R-REPLY-5).
type ReplyRow struct{ Row }

// KindError is a row taken for a kind it is not.
type KindError struct {
	ID   string
	Want string
}

func (e *KindError) Error() string { return fmt.Sprintf("delivery %s is not a %s row", e.ID, e.Want) }

// kind names a stored row's kind.
func (r Row) kind() string {
	switch {
	case r.IsDigest():
		return "digest"
	case r.Kind == KindReply:
		return "reply"
	}
	return "version"
}

// AsVersion takes a stored row as a version's; a *KindError if it is a
// digest or a reply's confirmation.
func AsVersion(r Row) (VersionRow, error) {
	if r.kind() != "version" {
		return VersionRow{}, &KindError{ID: r.ID, Want: "version"}
	}
	return VersionRow{r}, nil
}

// AsDigest takes a stored row as a digest; a *KindError if it is not one.
func AsDigest(r Row) (DigestRow, error) {
	if r.kind() != "digest" {
		return DigestRow{}, &KindError{ID: r.ID, Want: "digest"}
	}
	return DigestRow{r}, nil
}

// AsReply takes a stored row as a reply's confirmation; a *KindError if
// it is not one.
func AsReply(r Row) (ReplyRow, error) {
	if r.kind() != "reply" {
		return ReplyRow{}, &KindError{ID: r.ID, Want: "reply"}
	}
	return ReplyRow{r}, nil
}

// Versions takes stored rows as versions' (AsVersion), all or none.
func Versions(rows []Row) ([]VersionRow, error) {
	out := make([]VersionRow, 0, len(rows))
	for _, r := range rows {
		v, err := AsVersion(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Stored is the rows as the store keeps them.
func Stored(rows []VersionRow) []Row {
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Row)
	}
	return out
}

// NewVersionRow is recipient's row of a version of changelist clKey,
// pending with its rendered message (R-OUTBOX-1): created before any
// send, never rendered again.
func NewVersionRow(jobID job.ID, clKey, recipient string, version int, msg Message, now time.Time) VersionRow {
	return VersionRow{Row{ID: ID(clKey, recipient, version), JobID: jobID, ChangelistKey: clKey,
		Recipient: NormalizeRecipient(recipient), ReviewVersion: version,
		Status: StatusPending, Message: msg, CreatedAt: now, UpdatedAt: now}}
}

// NoEmailRow is the row of a reviewer the fetch stage found no address
// for, keyed by their "<source>:<username>" identity: terminal as
// skipped_no_email, never sent, settled for the job's verdict.
func NoEmailRow(jobID job.ID, clKey, identity string, version int, now time.Time) VersionRow {
	return VersionRow{Row{ID: ID(clKey, identity, version), JobID: jobID, ChangelistKey: clKey,
		Recipient: NormalizeRecipient(identity), ReviewVersion: version,
		Status: StatusSkippedNoEmail, CreatedAt: now, UpdatedAt: now}}
}

// Digested reports the digest a version row was settled into, if it was
// (R-DIGEST-2).
func (r VersionRow) Digested() (digestID string, ok bool) {
	return r.Digest, r.Status == StatusDigested && r.Digest != ""
}

// NewDigestRow is the digest of recipient for the period due at due,
// whose local date is date: what a version row settled into it names,
// and what gathers its entry.
func NewDigestRow(recipient string, due time.Time, date string) DigestRow {
	return DigestRow{Row{ID: DigestID(recipient, due), Recipient: NormalizeRecipient(recipient), Period: date, DueAt: due}}
}

// Due is when the digest is due, from its id (DigestDue); ok is false
// for an id that names no due time.
func (d DigestRow) Due() (time.Time, bool) { return DigestDue(d.ID) }
