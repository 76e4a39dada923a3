package dynamo_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The deliveries' contract on DynamoDB Local: the conformance suite the
// in-memory deliveries pass too (package memstore).
// Rules: R-STORE-1, R-OUTBOX-1, R-OUTBOX-2, R-OUTBOX-3, R-OUTBOX-4, R-OUTBOX-6, R-OUTBOX-7, R-EVIDENCE-1, R-EVIDENCE-5, R-RECON-2, R-STORE-3.
func TestDeliveries_DynamoDB(t *testing.T) {
	storetest.Deliveries(t, func(t *testing.T, now store.Clock) store.Deliveries {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, now)
	})
}

// The digest rows' contract on DynamoDB Local: the deliveries table, its
// live index's digests partition.
// Rules: R-STORE-1, R-DIGEST-1, R-DIGEST-2, R-DIGEST-3, R-STORE-3.
func TestDigests_DynamoDB(t *testing.T) {
	storetest.Digests(t, func(t *testing.T, now store.Clock) storetest.DigestRows {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, now)
	})
}

// The jobs table's and the evidence path's contracts on DynamoDB Local.
// Rules: R-STORE-1, R-INTAKE-1, R-INTAKE-2, R-INTAKE-3, R-EVIDENCE-2, R-EVIDENCE-3, R-THREAD-1, R-SOURCE-6, R-STORE-3, R-STAGE-7, R-QUIET-1, R-LAYER-2.
func TestJobs_DynamoDB(t *testing.T) {
	storetest.Jobs(t, func(t *testing.T, now store.Clock) store.Jobs {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewJobs(env.Clients.DynamoDB, res.JobsTable, now)
	})
	storetest.Evidence(t, func(t *testing.T, now store.Clock) store.Evidence {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewEvidence(env.Clients.DynamoDB, res.JobsTable, now)
	})
}

// The reviewer stores on DynamoDB Local: rosters, the directory (its
// sparse index) and reviewers added to jobs.
// Rules: R-STORE-1, R-REVIEWERS-1, R-REVIEWERS-2, R-REVIEWERS-4, R-STORE-3.
func TestReviewerStores_DynamoDB(t *testing.T) {
	storetest.Reviewers(t, func(t *testing.T) storetest.ReviewerStores {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return storetest.ReviewerStores{
			Rosters:   dynamo.NewRosters(env.Clients.DynamoDB, res.JobsTable, nil),
			Directory: dynamo.NewDirectory(env.Clients.DynamoDB, res.JobsTable, nil),
			Jobs:      dynamo.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil),
		}
	})
}

// Dismissals on DynamoDB Local: one item per changelist and reader,
// written on the revision read, read for every recipient in one batch.
// Rules: R-STORE-1, R-VOTE-3.
func TestDismissals_DynamoDB(t *testing.T) {
	storetest.Dismissals(t, func(t *testing.T) store.Dismissals {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewDismissals(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}

// Votes on DynamoDB Local: one item per finding of an email, the latest
// choice.
// Rules: R-STORE-1, R-VOTE-1.
func TestVotes_DynamoDB(t *testing.T) {
	storetest.Votes(t, func(t *testing.T) store.Votes {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewVotes(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}

// Mutes and reply windows on DynamoDB Local: a mute per changelist and
// reader read in one batch; a window's conditional set admits at most
// max replies, each once.
// Rules: R-STORE-1, R-REPLY-6, R-REPLY-7, R-REPLY-8, R-STORE-3.
func TestReplies_DynamoDB(t *testing.T) {
	storetest.Replies(t, func(t *testing.T) storetest.ReplyStores {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewReplies(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}

// Learnings on DynamoDB Local: one item per repository, its tally's
// bounds and the operator's decision as conditional writes.
// Rules: R-STORE-1, R-LEARN-1, R-LEARN-2.
func TestLearnings_DynamoDB(t *testing.T) {
	storetest.Learnings(t, func(t *testing.T) store.Learnings {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewLearnings(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}
