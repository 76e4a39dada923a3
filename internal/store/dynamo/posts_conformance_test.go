package dynamo_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The post rows' contract on DynamoDB Local: the deliveries table, its
// live index's post partition.
// Rules: R-STORE-1, R-CHANNEL-1, R-CHANNEL-3.
func TestPosts_DynamoDB(t *testing.T) {
	storetest.Posts(t, func(t *testing.T, now store.Clock) store.Posts {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewPosts(env.Clients.DynamoDB, res.DeliveriesTable, now)
	})
}
