package memstore_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// The in-memory jobs table keeps the diff versions' contract.
// Rules: R-QUIET-1, R-STORE-1.
func TestSameDiff_Memory(t *testing.T) {
	storetest.SameDiff(t, func(*testing.T) storetest.SameDiffer { return memstore.NewJobs(nil) })
}
