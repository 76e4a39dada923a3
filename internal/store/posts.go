package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
)

// Posts is the post rows' contract (R-CHANNEL-1): a channel other than
// email carried under the outbox's protocol in the deliveries table.
// dynamo.Posts keeps them on DynamoDB and memstore.Posts in memory;
// storetest.Posts proves them alike (R-STORE-1).
//
// A row is created once with its rendered post and body (EnsurePost);
// claimed in one conditional write while pending or under a lapsed
// lease (ClaimPost); marked sent with the channel's receipt, or released
// for another try, under the claim's token (MarkPostSent, ReleasePost);
// or settled without a send (SettlePost), a row that does not exist yet
// included, so a late Started post never follows its Finished one.
type Posts interface {
	// EnsurePost creates r if no row has its id and returns the row as
	// stored (the new one, or the existing one unchanged) and whether it
	// was created.
	EnsurePost(ctx context.Context, r channel.Row) (channel.Row, bool, error)
	// GetPost reads a row, strongly consistent; ErrNotFound if none.
	GetPost(ctx context.Context, id string) (channel.Row, error)
	// ClaimPost takes a pending row, or a sending one whose lease lapsed,
	// for sending: attempts+1, a lease and token. ErrConflict when the
	// row is not claimable (sent, settled, or under a live lease).
	ClaimPost(ctx context.Context, id, token string, lease time.Duration) (channel.Row, error)
	// MarkPostSent records the receipt and status sent, under the claim.
	MarkPostSent(ctx context.Context, id, token string, receipt channel.Receipt) (channel.Row, error)
	// ReleasePost returns a claimed row to pending with the error class.
	ReleasePost(ctx context.Context, id, token, errorClass string) (channel.Row, error)
	// SettlePost settles r's row without a send: only while it does not
	// exist (it is created settled), is pending, or is claimed under
	// token (token "" matches no claim). ErrConflict otherwise.
	SettlePost(ctx context.Context, r channel.Row, token, reason string) (channel.Row, error)
	// UnsettledPosts calls fn for every row that is pending, or sending
	// under a lease that lapsed before now: what the sweeper hands back
	// to its queue (R-CHANNEL-5).
	UnsettledPosts(ctx context.Context, fn func(channel.Row) error) error
}

// PostBodyMax bounds a post's stored body (and its rendered post): a
// webhook body above it is cut by its renderer, never stored whole.
const PostBodyMax = 64 << 10
