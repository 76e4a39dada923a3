package dynamo_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Model-run budgets and reviewer webhooks' replay records on DynamoDB
// Local: the suites the in-memory stores pass too.
// Rules: R-STORE-1, R-BUDGET-1, R-BUDGET-3, R-STORE-3.
func TestBudgets_DynamoDB(t *testing.T) {
	storetest.Budgets(t, func(t *testing.T) store.Budgets {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewBudgets(env.Clients.DynamoDB, res.JobsTable, nil)
	})
	storetest.Replays(t, func(t *testing.T, now store.Clock) store.Replays {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewReplays(env.Clients.DynamoDB, res.JobsTable, now)
	})
}
