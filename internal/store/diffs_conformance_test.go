package store_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The versions of each diff content on DynamoDB Local: one number-set ADD
// per call, nothing lost to concurrent versions.
// Rules: R-QUIET-1, R-STORE-1.
func TestSameDiff_DynamoDB(t *testing.T) {
	storetest.SameDiff(t, func(t *testing.T) storetest.SameDiffer {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return store.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}
