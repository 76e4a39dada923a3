// Package delivery holds the delivery row: one per (changelist, recipient,
// review version), its deterministic id, its lifecycle, and the pure decisions
// of the send-then-mark protocol (R-OUTBOX-1, R-OUTBOX-4, the delivery lifecycle).
//
// The decisions live here, apart from DynamoDB and SES, so every branch of
// R-UNSUB-1 is a plain unit test; the store and the notifier only carry them out.
package delivery

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// Status is a delivery row's state.
//
//	pending ─claim─► sending ─send ok─► sent ─event─► delivered
//	   ▲               │  └─transient─► failed_transient ─► (claim again)
//	   │               ├─permanent─► failed_permanent
//	   │               └─answer lost─► (sending, held) until provider evidence decides:
//	   │                      a Send event ─► sent (backfilled, never resent)
//	   └── requeue ◄───────── the evidence path caught up past it, no event names it
//	sent without evidence once the evidence path caught up ─► reconciling (operator)
//	suppressed, skipped_unsubscribed, skipped_no_email, skipped_domain: terminal, never sent
//	pending/failed_transient ─► skipped_same_diff, skipped_nothing_new, superseded:
//	  terminal, never sent (quiet.go), decided before a claim
//	pending/failed_transient ─► digested: into the recipient's daily digest (digest.go)
//	a digest row: open ─close─► pending … as above, or skipped_empty (digest.go)
//	pending/failed_transient ─► skipped_muted: the reader muted the changelist by reply
//	  (R-REPLY-7), terminal, never sent
type Status string

const (
	StatusPending             Status = "pending"
	StatusSending             Status = "sending"
	StatusSent                Status = "sent"
	StatusDelivered           Status = "delivered"
	StatusFailedTransient     Status = "failed_transient"
	StatusFailedPermanent     Status = "failed_permanent"
	StatusReconciling         Status = "reconciling"
	StatusSuppressed          Status = "suppressed"
	StatusSkippedUnsubscribed Status = "skipped_unsubscribed"
	StatusSkippedNoEmail      Status = "skipped_no_email"
	// StatusSkippedDomain: the address's domain is not one the operator
	// allows (CRITICIZER_ALLOWED_RECIPIENT_DOMAINS, R-RECIPIENT-1).
	StatusSkippedDomain Status = "skipped_domain"
	// StatusSkippedMuted: the reader replied "mute" to an email about the
	// changelist: no more email about it to them (R-REPLY-7).
	StatusSkippedMuted Status = "skipped_muted"
)

// ClaimableStatuses are the statuses a worker may take a row from to send
// it; the store's claim condition is built from them.
func ClaimableStatuses() []Status { return []Status{StatusPending, StatusFailedTransient} }

// UnsettledStatuses are the statuses of a row that may need a hand from
// outside its notifier: a send in flight or held, and a row an operator
// must settle. The store's sweep and held-row queries are built from them.
func UnsettledStatuses() []Status { return []Status{StatusSending, StatusReconciling} }

// Operators' verdicts on a held row (Row.Resolution).
const (
	ResolvedSent     = "operator: sent"
	ResolvedRequeued = "operator: requeued"
)

// Unsettled reports whether a row may need a hand from outside its
// notifier, what the sweeper looks for: in UnsettledStatuses (a send in
// flight or held, a row under reconciliation), or sent before sentBefore
// with no provider event naming it yet and not resolved as sent by an
// operator (a sent row whose confirmation never came).
func (r Row) Unsettled(sentBefore time.Time) bool {
	if slices.Contains(UnsettledStatuses(), r.Status) {
		return true
	}
	return r.Status == StatusSent && r.NotifiedAt.Before(sentBefore) && r.ProviderMessageID == "" && !r.HasEvidence() &&
		r.Resolution != ResolvedSent
}

// Claimable reports whether a worker may take the row to send it.
func (s Status) Claimable() bool {
	return slices.Contains(ClaimableStatuses(), s)
}

// Done reports whether the row needs no further send: it was sent, or it is
// terminal without a send.
func (s Status) Done() bool {
	switch s {
	case StatusSent, StatusDelivered, StatusSuppressed, StatusSkippedUnsubscribed, StatusSkippedNoEmail,
		StatusSkippedDomain, StatusDigested, StatusSkippedEmpty, StatusSkippedMuted:
		return true
	}
	return s.Quiet()
}

// NormalizeRecipient is the form of an address used in the delivery key: trimmed
// and lower-cased. Local parts are case-sensitive in theory (RFC 5321) but no
// mail provider Criticizer targets treats them so, and a reviewer listed as
// Ann@x and ann@x must get one email, not two.
func NormalizeRecipient(addr string) string {
	return strings.ToLower(strings.TrimSpace(addr))
}

// ID derives the delivery id from (changelist, recipient, review_version).
// It is the delivery key and the provider idempotency token: SES has no
// idempotency key, so the id travels as a message tag and a header and the
// feedback stream matches provider evidence back to the row by it
// (R-OUTBOX-3, R-OUTBOX-10).
func ID(changelistKey, recipient string, reviewVersion int) string {
	return "d_" + job.Hash("delivery", changelistKey, NormalizeRecipient(recipient), strconv.Itoa(reviewVersion))
}

// KindReply marks a row that is not a critique but the confirmation of a
// reply (Row.Kind, R-REPLY-5): keyed by the reply's sender and its own
// Message-ID (ReplyIDOf), or by SES's message id when it has none fit to
// key by (ReplyID); sent by notify's reply task, not its job's run.
const KindReply = "reply"

// ReplyID is the delivery id of the confirmation of a reply without a
// Message-ID fit to key by, which SES received as sesMessageID: that one
// receipt delivered twice (SQS redelivery, a redrive with a new SQS
// message id) is one row, one email.
func ReplyID(sesMessageID string) string { return "d_" + job.Hash("reply", sesMessageID) }

// ReplyIDOf is the delivery id of the confirmation of the reply sender
// wrote as messageID (its Message-ID field, angle brackets included): one
// row, one email, however many times the reply is received — a mail
// server that lost the answer to its DATA sends it again, and SES gives
// each receipt its own message id (R-REPLY-8). The sender is part of the
// key, so a reply can only ever meet the confirmations of its own sender.
func ReplyIDOf(sender, messageID string) string {
	return "d_" + job.Hash("reply-message", NormalizeRecipient(sender), messageID)
}

// Row is one delivery row.
type Row struct {
	ID string
	// Kind is "" for a critique, KindReply for a reply's confirmation.
	Kind           string
	JobID          job.ID
	ChangelistKey  string
	Recipient      string
	ReviewVersion  int
	Status         Status
	Attempts       int
	LeaseUntil     time.Time
	ClaimToken     string
	NotificationID string
	NotifiedAt     time.Time
	LastErrorClass string
	// SkipReason says why a row was settled without a send (suppressed:
	// "bounce" or "complaint"; skipped_unsubscribed: the scope left;
	// skipped_domain: "domain").
	SkipReason string
	Message    Message
	// Provider evidence, recorded by the feedback function from SES event
	// publishing (matched by the delivery_id tag).
	ProviderMessageID string
	SendEventAt       time.Time
	DeliveredAt       time.Time
	BouncedAt         time.Time
	BounceType        string
	ComplainedAt      time.Time
	RejectedAt        time.Time
	// A transient bounce (or a Reject: provider evidence that the message
	// was not delivered) sends the row again, at most a few times: when the
	// last one came and how many resends it caused. BouncedMessageIDs are
	// the provider message ids of those undelivered sends: their later
	// events are not evidence for the row any more.
	LastBounceAt      time.Time
	BounceResends     int
	BouncedMessageIDs []string
	// DuplicateMessageIDs are provider message ids of sends of this row
	// other than the one it records: proof that it was sent more than once
	// (an evidence event late beyond the margin, or lost). Kept for the
	// operator; the DuplicateSends metric counts them.
	DuplicateMessageIDs []string
	// EvidenceCheckedAt is when a notifier last looked at this row while it
	// awaited provider evidence (a send whose answer was lost): the
	// sweeper hands a held row back to notify only when nobody has looked
	// at it for a while.
	EvidenceCheckedAt time.Time
	// ResentWithoutEvidence counts resends made because the evidence path
	// caught up past an ambiguous send and no event named it.
	ResentWithoutEvidence int
	// Resolution is an operator's verdict on a held row ("operator: sent",
	// "operator: requeued"); a row resolved as sent is never reconciled
	// again.
	Resolution string
	// Digest, on a version row settled digested, is the id of the digest
	// row its entry went into (R-DIGEST-2).
	Digest string
	// Period is a digest row's local date ("2026-11-28"), and a digested
	// version row's digest's. DueAt and Entries are a digest row's (its
	// id marks one, IsDigest): when it is due, and the ids of the version
	// rows it gathered.
	Period  string
	DueAt   time.Time
	Entries []string
	// StandsOn, on a row settled quietly (superseded, skipped_same_diff,
	// skipped_nothing_new), is the id of the row whose content reaching
	// the recipient the settlement rests on: the newer version that
	// reached them, or the version with the same content they had.
	// Dependents, on that row, are the ids of the quiet rows standing on
	// it. Both are written in one transaction (store SettleQuiet), so a
	// verdict that later undoes the row (a Reject, a bounce: Undone)
	// finds every row that stood on it, and they are revived (R-QUIET-4).
	StandsOn   string
	Dependents []string
	// RevivedFrom, on a row revived that way, is the id of the undone row
	// it stood on: the row went back to pending, its job is reopened
	// next, and an operator can tell why a settled row was decided again.
	RevivedFrom string
	// Sweep is the store's bookkeeping: set while the row is in the live
	// index the sweeps read (internal/store/dynamo/index.go).
	Sweep     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Message is the rendered email, persisted with the row when the row is
// created so every retry sends byte-identical content.
type Message struct {
	Subject         string
	HTML            string
	Text            string
	TemplateVersion string
	ContentSHA256   string
	// UnsubscribeURL is the recipient's one-click unsubscribe link, sent as
	// the List-Unsubscribe header (RFC 8058); empty: no such header. The
	// bodies show it too, so ContentSHA256 covers it.
	UnsubscribeURL string
	// The values of the headers a reader's client threads and filters by
	// (mail.FilingHeaders), rendered with the message so a retry sends
	// the same: Thread is the recipient's conversation root about the
	// changelist, sent as References and In-Reply-To (R-THREAD-1); ListID
	// the List-Id value, Reason why the recipient is mailed, Severity the
	// highest finding's (R-MAIL-4). Empty: no such header (rows rendered
	// before they existed). ContentSHA256 covers them.
	Thread   string
	ListID   string
	Reason   string
	Severity string
	// Findings are the ids (vote.FindingID) of the findings the email
	// lists under its version, in the order it lists them, separated by
	// spaces: the finding a reader calls number n is the n-th (Finding,
	// R-VOTE-3). A digest's name each finding with the version row it is
	// recorded on (DigestFinding, R-DIGEST-6). A string, so that a Message
	// stays comparable. Not part of ContentSHA256: it says what the bodies
	// show. Empty: no findings, or a row rendered before it existed.
	Findings string
	// ReplyTo is the Reply-To address the email is sent with: the
	// delivery's reply address (R-REPLY-1). Empty: replies are off (no
	// inbound domain) and the email has no Reply-To. ContentSHA256 covers
	// it when set.
	ReplyTo string
}

// Finding is the id of the finding the email numbers n (from 1), and
// whether it lists that many.
func (m Message) Finding(n int) (string, bool) {
	ids := strings.Fields(m.Findings)
	if n < 1 || n > len(ids) {
		return "", false
	}
	return ids[n-1], true
}

// HasEvidence reports whether the provider confirmed it accepted the
// message (a Send, Delivery, Bounce, Complaint or Reject event).
func (r Row) HasEvidence() bool {
	return !r.SendEventAt.IsZero() || !r.DeliveredAt.IsZero() || !r.BouncedAt.IsZero() || !r.ComplainedAt.IsZero() ||
		!r.RejectedAt.IsZero()
}

// Bounced reports whether the provider message id is one of the row's
// undelivered sends (a transient bounce or a Reject that was resent).
func (r Row) Bounced(messageID string) bool {
	for _, id := range r.BouncedMessageIDs {
		if id == messageID {
			return true
		}
	}
	return false
}

// NotSentError marks a send that failed before anything reached the
// provider (the send-rate limiter gave up, or its counter failed): the row
// is released at once, never held for provider evidence the way a send
// that timed out is.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }
