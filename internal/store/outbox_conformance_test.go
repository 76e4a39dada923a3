package store_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The outbox's contract on DynamoDB Local: the conformance suite the
// in-memory outbox passes too (package memstore).
// Rules: R-STORE-1, R-OUTBOX-1, R-OUTBOX-2, R-OUTBOX-3, R-OUTBOX-4, R-OUTBOX-6, R-OUTBOX-7, R-EVIDENCE-1, R-EVIDENCE-5, R-RECON-2.
func TestOutbox_DynamoDB(t *testing.T) {
	storetest.Outbox(t, func(t *testing.T, now store.Clock) store.Outbox {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return store.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, now)
	})
}
