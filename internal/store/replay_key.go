package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// ReplayKey names one thing a reviewer event is remembered by, within its
// source: its delivery id, or the SHA-256 of its verified body. The body
// is needed where the delivery id is a header the source's signature does
// not cover (GitHub's X-GitHub-Delivery): a captured request replayed
// under a fresh id has a new id but the same body. The two kinds never
// name each other's records, whatever a delivery id says.
type ReplayKey struct {
	Source string
	// Body: ID is the hex SHA-256 of the body, not a delivery id.
	Body bool
	ID   string
}

// ReplayByDelivery is the key of a source's delivery id.
func ReplayByDelivery(source, deliveryID string) ReplayKey {
	return ReplayKey{Source: source, ID: deliveryID}
}

// ReplayByBody is the key of a source's request body (the bytes its
// signature was verified over).
func ReplayByBody(source string, body []byte) ReplayKey {
	sum := sha256.Sum256(body)
	return ReplayKey{Source: source, Body: true, ID: hex.EncodeToString(sum[:])}
}

// Replays remembers reviewer webhooks (by delivery id and by body)
// and the reviewer refreshes scheduled (dynamo.Replays on DynamoDB,
// memstore.Replays in memory).
type Replays interface {
	// ClaimDelivery records a delivery's key for window. false: the key
	// was seen within the window (a replay), or another intake is
	// handling it now (its claim is younger than lease).
	ClaimDelivery(ctx context.Context, k ReplayKey, window, lease time.Duration) (bool, error)
	// CompleteDelivery marks a claimed key handled: it is a replay for
	// the rest of its window, whatever the lease.
	CompleteDelivery(ctx context.Context, k ReplayKey) error
	// ReleaseDelivery forgets a claim whose handling failed, so the
	// source's retry is handled.
	ReleaseDelivery(ctx context.Context, k ReplayKey) error
	// ScheduleRefresh reports whether the caller should enqueue a
	// reviewer refresh of id: true when none was scheduled within the
	// last window (the caller sends it delayed by window, so it runs after
	// every event it stands for); false when one is scheduled and has not
	// run yet.
	ScheduleRefresh(ctx context.Context, id job.ID, window time.Duration) (bool, error)
	// CancelRefresh forgets a schedule whose enqueue failed.
	CancelRefresh(ctx context.Context, id job.ID) error
}
