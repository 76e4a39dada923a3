package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Digests is what notify and the sweeper do with the daily digest's rows
// (R-DIGEST-*) beyond the delivery rows' own writes: a digest row is a delivery
// row (the same table, the same claim, mark and evidence), created open
// to gather its recipient's version rows until it is due, then closed
// with its message. dynamo.Deliveries keeps it on DynamoDB and
// memstore.Deliveries in memory; storetest.Digests proves them alike
// (R-STORE-1).
type Digests interface {
	// SettleDigested settles a version row that was never sent as
	// digested, naming the digest its entry goes into (d: its id and
	// period): only while it is claimable and carries no sign of a send,
	// as Skip. ErrConflict: the row is no longer so.
	SettleDigested(ctx context.Context, id string, d delivery.Row) (delivery.Row, error)
	// MoveDigested points a digested version row at another digest (to),
	// from the one it names (which closed without its entry): only while
	// it still names from. ErrConflict: it names another one.
	MoveDigested(ctx context.Context, id, from string, to delivery.Row) (delivery.Row, error)
	// AddToDigest adds entry (a version row's id) to digest d.ID, creating
	// the digest open (d's recipient, period and due time) if it does not
	// exist: only while it is open and holds fewer than max entries or
	// holds entry already. It returns the digest as it is now, holding
	// entry; ErrConflict, with the digest as it is, when it takes no more
	// entries (closed, or full) and does not hold entry. A repeat adds
	// nothing.
	AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error)
	// CloseDigest closes an open digest with its message (status pending,
	// to be claimed and sent like any row) or settles it without one
	// (skipped_empty, suppressed, skipped_unsubscribed, with the reason):
	// only while it is open and holds exactly entries entries, so an
	// entry added after it was read fails the close rather than be
	// dropped. ErrConflict: it changed.
	CloseDigest(ctx context.Context, id string, entries int, c DigestClose) (delivery.Row, error)
	// DueDigests calls fn, in id order, for every digest row due at or
	// before dueBy that is open, or closed and never claimed
	// (delivery.Row.AwaitsClose): the sweeper's to hand to notify.
	DueDigests(ctx context.Context, dueBy time.Time, fn func(delivery.Row) error) error
}

// DigestClose is how a digest is closed: Status pending with the Message
// to send, or a terminal status with the Reason.
type DigestClose struct {
	Status  delivery.Status
	Message delivery.Message
	Reason  string
}
