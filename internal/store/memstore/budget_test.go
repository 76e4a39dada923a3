package memstore_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// The in-memory budgets and replay records keep DynamoDB's contract.
// Rules: R-STORE-1, R-STORE-3.
func TestBudgets_Memstore(t *testing.T) {
	storetest.Budgets(t, func(*testing.T) store.Budgets { return memstore.NewBudgets() })
	storetest.Replays(t, func(_ *testing.T, now store.Clock) store.Replays { return memstore.NewReplays(now) })
}
