package store

import (
	"context"
	"time"
)

// Mutes keeps the changelists readers muted by replying "mute"
// (R-REPLY-7): per (changelist, recipient), no more email about that
// changelist to that recipient. It is not a preference across
// repositories (the recipient's PREF# item is): one changelist, one
// reader.
type Mutes interface {
	// Mute records that the recipient (unsubscribe.RecipientID) muted the
	// changelist (job.ChangelistKey) at at; muting again changes nothing.
	Mute(ctx context.Context, changelistKey, recipientID string, at time.Time) error
	// Muted reads which of the recipients muted the changelist, in one
	// batch read; a recipient who did not is absent.
	Muted(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]bool, error)
}

// ReplyWindows counts the replies to one email in a window
// (R-REPLY-6), so an outsider who holds a reply address cannot make
// Criticizer write or mail without end.
type ReplyWindows interface {
	// Admit counts the reply messageID (SES's message id) against the
	// window of the delivery that starts at start, holding at most max;
	// true when it is counted now or was before (a redelivery of the same
	// reply is admitted again, never counted twice), false when the
	// window is full.
	Admit(ctx context.Context, deliveryID, messageID string, start time.Time, window time.Duration, max int) (bool, error)
}

// ReplyClaims fences the acting on a reply (R-REPLY-8): SES gives each
// receipt of one reply its own message id (a mail server that lost the
// answer to its DATA sends the reply again), and the receipts may be
// processed at once by two invocations; exactly one of them carries out
// the reply's commands and writes its confirmation.
type ReplyClaims interface {
	// Claim records that SES's receipt sesMessageID acts on the reply
	// whose confirmation is confirmationID (delivery.ReplyIDOf): true when
	// it does (claimed now, or by this same receipt before: its retry
	// goes on where it stopped), false when another receipt holds it.
	Claim(ctx context.Context, confirmationID, sesMessageID string) (bool, error)
}
