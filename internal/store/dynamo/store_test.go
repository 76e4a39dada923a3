package dynamo_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
)

// These are adapter tests: they run against DynamoDB Local, started by
// `make test`. The outbox's, the jobs table's and the evidence path's
// contracts are in deliveries_conformance_test.go (package storetest).

func newJobs(t *testing.T) *dynamo.Jobs {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	return dynamo.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)
}
