package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A changelist's versions follow its code host's order, not the order in
// which intake sees the pushes (R-SOURCE-6). GitHub delivers webhooks in
// no order, an operator's redelivery of a failed one comes whenever it
// comes, and two pushes may be handled at once: a head commit the host
// places behind one already versioned must never get a higher version
// than it, and the changelist's newest head must never be refused.
//
// Intake places each new head with what its event says, without asking
// the host (PlaceHead): it holds no code host credentials, and must answer
// fast whatever the host's state. An event that names the head it
// replaced (GitHub's synchronize `before`, GitLab's `oldrev`) orders the
// two:
//
//   - its `before` is the newest versioned head: the new head follows it,
//     the next version;
//   - its head was named as the `before` of a head already versioned: it
//     is behind that one, stale, no version;
//   - anything else (no `before`, or one intake has not seen as the newest
//     head): the next version, pending the host's word, which the fetch
//     stage asks for before anything is reviewed (Fetch.order: GitHub's
//     compare status, GitLab's merge request versions). A head the host
//     places behind is settled behind and skipped: it mails no one, and
//     R-QUIET-3 then mails the newer version in its stead.
//
// Every version is drawn under a condition on the changelist's counter
// (the last version and the head it went to), so two heads placed at
// once are placed one after the other: the loser reads the winner's
// placement and decides again.

// HeadOrder is what is known of a head commit's place among its
// changelist's versions.
type HeadOrder string

const (
	// HeadOrdered: in the host's order, newer than every version below
	// its own that is not behind. Items written before heads were ordered
	// have no order and count as ordered.
	HeadOrdered HeadOrder = "ordered"
	// HeadPending: drawn as the newest version, the host's word awaited;
	// the fetch stage settles it before the version is reviewed.
	HeadPending HeadOrder = "pending"
	// HeadBehind: the host places it behind a versioned head. With a
	// version: a pending head the fetch stage settled so (its job is
	// skipped); without one: named as the `before` of a versioned head,
	// and never given a version.
	HeadBehind HeadOrder = "behind"
)

// HeadEvent is a code host's word on a changelist's head commit.
type HeadEvent struct {
	Source, ChangelistID, HeadSHA string
	// BeforeSHA is the head the change had just before this one, when the
	// event says (GitHub synchronize `before`, GitLab `oldrev`); empty
	// when it does not (an open, a reopen, a review request).
	BeforeSHA string
}

// Placement is PlaceHead's answer.
type Placement struct {
	// Version is the head's review version; 0 when Stale.
	Version int
	// Pending: the version was drawn as the newest and awaits the host's
	// word (HeadPending).
	Pending bool
	// Stale: the host places the head behind a versioned head; it has no
	// version. Current is the newest version then.
	Stale   bool
	Current int
	// PlacedAt is when the head got its version.
	PlacedAt time.Time
}

// HeadRecord is what the store keeps of one head commit.
type HeadRecord struct {
	SHA string
	// Version is the head's review version; 0 for a head known only as
	// the `before` of a versioned one.
	Version int
	Order   HeadOrder
	// After is the head versioned just before this one, when its version
	// was drawn ("" for the first): the fetch stage compares a pending
	// head with it, and with those before it while they are pending.
	After string
	// BehindVersion, for a head never versioned, is the version whose
	// event named it as its `before`.
	BehindVersion int
	// PlacedAt is when the head got its version (or its mark).
	PlacedAt time.Time
}

// Ordered reports whether the head is known to be in the host's order.
func (h HeadRecord) Ordered() bool { return h.Order == HeadOrdered || h.Order == "" }

// Heads orders a changelist's head commits as its code host does
// (R-SOURCE-6). dynamo.Jobs keeps them on DynamoDB and memstore.Jobs in
// memory; storetest.Heads proves them alike.
type Heads interface {
	// PlaceHead returns the version of ev's head, drawing the next one
	// the first time the head is seen unless the event shows it behind
	// a versioned head (Placement.Stale).
	PlaceHead(ctx context.Context, ev HeadEvent) (Placement, error)
	// Head reads what is known of a head commit, or ErrNotFound.
	Head(ctx context.Context, source, changelistID, sha string) (HeadRecord, error)
	// SettleHead records the host's word on a pending head (HeadOrdered
	// or HeadBehind), only while it is pending: it returns the record as
	// it stands, the word an earlier call recorded included.
	SettleHead(ctx context.Context, source, changelistID, sha string, order HeadOrder) (HeadRecord, error)
}

// ErrStaleHead is what AssignVersion answers for a head the code host
// places behind a versioned one.
var ErrStaleHead = errors.New("the code host places this head behind a version already assigned")

// Draw is DecidePlacement's answer for a head without a version: stale,
// or the next version to draw for it.
type Draw struct {
	// Stale: behind a versioned head; Current is the newest version.
	Stale   bool
	Current int
	// Order and After are the drawn version's (HeadRecord); Mark, when
	// set, is the event's before, unknown until now, to record behind it.
	Order HeadOrder
	After string
	Mark  string
}

// CounterState is a changelist's version counter as a driver read it.
type CounterState struct {
	Exists bool
	Last   int
	// Head is the head the last version PlaceHead drew went to ("" on
	// counters written before heads were ordered, or after a rerun only).
	Head string
}

// DecidePlacement is PlaceHead's decision for a head without a version,
// the same on both drivers; the driver draws Last+1 under a condition on
// the counter it read. self is what is known of the head (nil: nothing;
// else a mark), before what is known of the event's before (nil:
// nothing, or the event names none).
func DecidePlacement(ev HeadEvent, self *HeadRecord, c CounterState, before *HeadRecord) Draw {
	newest := before
	follows := ev.BeforeSHA != "" && ev.BeforeSHA == c.Head && newest != nil && newest.Version > 0
	switch {
	case c.Last == 0:
		return Draw{Order: HeadOrdered, Mark: unknownBefore(ev, before)}
	case follows && newest.Ordered():
		// The host says this head follows the newest, which is in order:
		// the next version, in order. It overrides a mark on the head,
		// which a force-push back to a head once replaced brings back.
		return Draw{Order: HeadOrdered, After: c.Head}
	case self != nil:
		// Named as the before of a versioned head: behind it.
		return Draw{Stale: true, Current: c.Last}
	case follows && newest.Order == HeadPending:
		// It follows the newest, whose own place is still to be settled:
		// so is its.
		return Draw{Order: HeadPending, After: c.Head}
	}
	// Nothing says where it stands (the newest, which its event may
	// name, may have been found behind): the host will.
	return Draw{Order: HeadPending, After: c.Head, Mark: unknownBefore(ev, before)}
}

// unknownBefore is the event's before when nothing is known of it: it is
// marked behind the head being placed.
func unknownBefore(ev HeadEvent, before *HeadRecord) string {
	if ev.BeforeSHA == "" || ev.BeforeSHA == ev.HeadSHA || before != nil {
		return ""
	}
	return ev.BeforeSHA
}

// CheckHeadEvent refuses an event without a source, changelist or head.
func CheckHeadEvent(ev HeadEvent) error {
	if ev.Source == "" || ev.ChangelistID == "" || ev.HeadSHA == "" {
		return fmt.Errorf("place head: source, changelist and head commit are required")
	}
	return nil
}

// AssignVersionOf places a head its event says nothing more of (a
// HeadEvent without a before) on h: its version, or an error wrapping
// ErrStaleHead. The drivers' AssignVersion; intake calls PlaceHead.
func AssignVersionOf(ctx context.Context, h Heads, source, changelistID, headSHA string) (int, error) {
	p, err := h.PlaceHead(ctx, HeadEvent{Source: source, ChangelistID: changelistID, HeadSHA: headSHA})
	if err != nil {
		return 0, err
	}
	if p.Stale {
		return 0, fmt.Errorf("%s of %s: %w (version %d)", headSHA, changelistID, ErrStaleHead, p.Current)
	}
	return p.Version, nil
}
