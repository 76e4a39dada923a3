package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// A changelist head written before heads kept their thread title has
// none: the first title KeepThreadTitle is given is kept, even when the
// answer to that write is lost and the SDK sends it again, and every later
// one gets it back.
// Rules: R-THREAD-1.
func TestThreadTitle_HeadWithoutOne_KeptOnceThroughALostAnswer(t *testing.T) {
	ctx := context.Background()
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	inj := fault.New()
	jobs := dynamo.NewJobs(dynamo.NewClient(awsclient.ForFunction(env.Endpoints, inj.Option()), env.Endpoints.DynamoDB), res.JobsTable, nil)
	j := storetest.NewJob("cl-legacy", 1)
	j.Title = "Add refunds"
	storetest.Create(t, jobs, j, "k1", "b1")
	if _, err := env.Clients.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(res.JobsTable),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: schema.PrefixChangelist + job.ChangelistKey("generic", "cl-legacy")}},
		UpdateExpression: aws.String("REMOVE thread_title")}); err != nil {
		t.Fatal(err)
	}
	if got, err := jobs.ThreadTitle(ctx, "generic", "cl-legacy"); err != nil || got != "" {
		t.Fatalf("a head without the attribute: %q, %v; want none", got, err)
	}
	inj.Add(fault.Rule{Service: "DynamoDB", Operation: "UpdateItem", Kind: fault.LoseAnswer, Times: 1})
	if got, err := jobs.KeepThreadTitle(ctx, "generic", "cl-legacy", "Derived"); err != nil || got != "Derived" {
		t.Fatalf("keep with its answer lost: %q, %v; want %q", got, err, "Derived")
	}
	if inj.Fired("DynamoDB", "UpdateItem") != 1 {
		t.Fatal("the fault did not fire")
	}
	if got, err := jobs.KeepThreadTitle(ctx, "generic", "cl-legacy", "Later"); err != nil || got != "Derived" {
		t.Fatalf("a second keep: %q, %v; want the first %q", got, err, "Derived")
	}
	j2 := storetest.NewJob("cl-legacy", 2)
	j2.Title = "Add refunds & credits"
	storetest.Create(t, jobs, j2, "k2", "b2")
	if got, err := jobs.ThreadTitle(ctx, "generic", "cl-legacy"); err != nil || got != "Derived" {
		t.Fatalf("after v2: %q, %v; want %q", got, err, "Derived")
	}
}
