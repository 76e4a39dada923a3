package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
)

// A claim whose answer was lost (DynamoDB did the write, the connection
// dropped) is retried by the SDK; the retry fails the condition against
// the first attempt's own write. The claim is still the caller's: a lost
// answer must neither drop a reviewer event as a "replay" nor leave a
// refresh scheduled that nobody enqueued.
// Rules: R-BUDGET-3.
func TestReplays_LostAnswerIsStillTheCallersClaim(t *testing.T) {
	ctx := context.Background()
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	inj := fault.New()
	db := dynamo.NewClient(awsclient.ForFunction(env.Endpoints, inj.Option()), env.Endpoints.DynamoDB)
	r := dynamo.NewReplays(db, res.JobsTable, nil)

	inj.Add(fault.Rule{Service: "DynamoDB", Operation: "UpdateItem", Kind: fault.LoseAnswer, Times: 1})
	ok, err := r.ClaimDelivery(ctx, store.ReplayByDelivery("github", "lost-answer"), time.Hour, time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim with its answer lost: %v, %v; want claimed", ok, err)
	}
	if inj.Fired("DynamoDB", "UpdateItem") != 1 {
		t.Fatal("the fault did not fire")
	}
	if ok, _ := r.ClaimDelivery(ctx, store.ReplayByDelivery("github", "lost-answer"), time.Hour, time.Minute); ok {
		t.Fatal("a second caller claimed it too")
	}

	inj.Add(fault.Rule{Service: "DynamoDB", Operation: "UpdateItem", Kind: fault.LoseAnswer, Times: 1})
	if ok, err := r.ScheduleRefresh(ctx, "j_lost", 10*time.Second); err != nil || !ok {
		t.Fatalf("schedule with its answer lost: %v, %v; want scheduled", ok, err)
	}
	if ok, _ := r.ScheduleRefresh(ctx, "j_lost", 10*time.Second); ok {
		t.Fatal("scheduled twice inside the window")
	}
}
