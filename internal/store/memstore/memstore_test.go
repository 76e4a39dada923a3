package memstore_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// The in-memory deliveries keep the contract DynamoDB keeps: the same
// conformance suite, with no stack.
// Rules: R-STORE-1, R-STORE-3.
func TestDeliveries_Memstore(t *testing.T) {
	storetest.Deliveries(t, func(_ *testing.T, now store.Clock) store.Deliveries { return memstore.NewDeliveries(now) })
}

// The in-memory jobs table and evidence path keep their contracts too,
// head commits placed in their code host's order and the stages' fenced
// writes included.
// Rules: R-STORE-1, R-SOURCE-6, R-STORE-3, R-STAGE-7, R-QUIET-1, R-LAYER-2.
func TestJobs_Memstore(t *testing.T) {
	storetest.Jobs(t, func(_ *testing.T, now store.Clock) store.Jobs { return memstore.NewJobs(now) })
	storetest.Evidence(t, func(_ *testing.T, now store.Clock) store.Evidence { return memstore.NewEvidence(now) })
}

// The in-memory reviewer stores keep the contract DynamoDB keeps.
// Rules: R-STORE-1, R-STORE-3.
func TestReviewerStores_Memstore(t *testing.T) {
	storetest.Reviewers(t, func(_ *testing.T) storetest.ReviewerStores {
		return storetest.ReviewerStores{Rosters: memstore.NewRosters(), Directory: memstore.NewDirectory(nil), Jobs: memstore.NewJobs(nil)}
	})
}

// The in-memory vote store keeps the contract DynamoDB keeps.
// Rules: R-STORE-1.
func TestVotes_Memstore(t *testing.T) {
	storetest.Votes(t, func(*testing.T) store.Votes { return memstore.NewVotes() })
}

// The in-memory dismissal store keeps the contract DynamoDB keeps.
// Rules: R-STORE-1, R-VOTE-3.
func TestDismissals_Memstore(t *testing.T) {
	storetest.Dismissals(t, func(*testing.T) store.Dismissals { return memstore.NewDismissals() })
}

// The in-memory preference store keeps the contract DynamoDB keeps.
// Rules: R-STORE-1, R-PREF-1, R-STORE-3.
func TestPreferences_Memstore(t *testing.T) {
	storetest.Preferences(t, func(*testing.T) store.Preferences { return memstore.NewPreferences() })
}

// The in-memory deliveries keep the digest rows' contract DynamoDB keeps.
// Rules: R-STORE-1, R-DIGEST-1, R-DIGEST-2, R-DIGEST-3, R-STORE-3.
func TestDigests_Memstore(t *testing.T) {
	storetest.Digests(t, func(_ *testing.T, now store.Clock) storetest.DigestRows { return memstore.NewDeliveries(now) })
}

// The in-memory mutes and reply windows keep the contract DynamoDB keeps.
// Rules: R-STORE-1, R-REPLY-6, R-REPLY-7, R-REPLY-8, R-STORE-3.
func TestReplies_Memstore(t *testing.T) {
	storetest.Replies(t, func(*testing.T) storetest.ReplyStores { return memstore.NewReplies() })
}

// The in-memory learnings store keeps the contract DynamoDB keeps.
// Rules: R-STORE-1, R-LEARN-1, R-LEARN-2.
func TestLearnings_Memstore(t *testing.T) {
	storetest.Learnings(t, func(*testing.T) store.Learnings { return memstore.NewLearnings() })
}

// The in-memory post rows keep the contract DynamoDB keeps.
// Rules: R-STORE-1, R-CHANNEL-1.
func TestPosts_Memstore(t *testing.T) {
	storetest.Posts(t, func(_ *testing.T, now store.Clock) store.Posts { return memstore.NewPosts(now) })
}
