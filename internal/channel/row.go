package channel

import (
	"context"
	"strconv"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// The row a post is carried on (R-CHANNEL-1): its own kind in the
// deliveries table, beside the email rows, under the same protocol.

// Status is where a post row is.
type Status string

const (
	// StatusPending: rendered and stored, not yet claimed (or released
	// after a failed try, to be claimed again).
	StatusPending Status = "pending"
	// StatusSending: claimed under a lease. A claim whose lease lapsed
	// (the answer was lost, or the invocation died) may be claimed again,
	// and is then reconciled with Channel.Find before any send.
	StatusSending Status = "sending"
	// StatusSent: the channel took it; Receipt says what it holds.
	StatusSent Status = "sent"
	// StatusSettled: never to be sent (SettleReason says why: the
	// channel has nothing to post it to, or the version's Finished post
	// came before its Started one was sent).
	StatusSettled Status = "settled"
)

// Done reports whether no send will happen on the row any more.
func (s Status) Done() bool { return s == StatusSent || s == StatusSettled }

// Row is one post's delivery row: one per (changelist, version, channel,
// phase). Post and Body are stored once, when the row is created, and
// never re-rendered: a resend carries the same body (R-CHANNEL-2).
type Row struct {
	ID      string
	JobID   job.ID
	Channel string
	Phase   Phase
	Status  Status
	// Post is the post as rendered when the row was created; Body, the
	// channel's own bytes for it (a webhook's exact body; nil for a
	// channel that renders at send).
	Post Post
	Body []byte
	// Attempts counts claims: a claim that is not the row's first is
	// reconciled with Find before its send (R-CHANNEL-3).
	Attempts       int
	LeaseUntil     time.Time
	ClaimToken     string
	Receipt        Receipt
	SentAt         time.Time
	LastErrorClass string
	SettleReason   string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Claimable reports whether a claim at now may take the row: pending, or
// sending under a lease that lapsed.
func (r Row) Claimable(now time.Time) bool {
	return r.Status == StatusPending || (r.Status == StatusSending && !r.LeaseUntil.After(now))
}

// VersionKeyOf is the key of one (source, changelist, version), the same
// for every phase and channel: what a code host's one status per head
// commit is found by.
func VersionKeyOf(source, changelist string, version int) string {
	return "v_" + job.Hash("post-version", source, changelist, strconv.Itoa(version))
}

// PostID is the stable id of the post of one version to one channel in
// one phase: a webhook's webhook-id, the row's key. It starts "msg_" as
// the Standard Webhooks examples' ids do, and is URL- and header-safe.
func PostID(versionKey, channel string, phase Phase) string {
	return "msg_" + job.Hash("post", versionKey, channel, string(phase))
}

type sendByKey struct{}

// WithSendBy marks ctx with the instant, on the store's clock, by which a
// Send must have reached its channel: its claim's lease less a margin
// (R-CHANNEL-3). posting sets it on Send's context beside the context's
// own deadline; a channel's HTTP client honours the deadline, so a send
// that did not reach its channel in time never does, and the next claim's
// Find sees all there is.
func WithSendBy(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, sendByKey{}, t)
}

// SendBy reports the instant WithSendBy set.
func SendBy(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(sendByKey{}).(time.Time)
	return t, ok
}
