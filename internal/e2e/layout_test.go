package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/testenv"
)

// TestUpdateInPlace_JobInFlightInTheOldLayoutIsMailed: a stack updated
// in place has jobs in flight that the code before wrote (the critique
// inline in the job item, the job in the old live index). Here the llm
// stage's job is put back in that layout before notify reads it, with
// its notify message held meanwhile: notify mails the critique it finds
// inline, exactly once, and finishing takes the job out of both live
// indexes (docs/operations.md).
// Rules: R-COST-6.
func TestUpdateInPlace_JobInFlightInTheOldLayoutIsMailed(t *testing.T) {
	const rcpt = "inplace@example.com"
	var rewritten atomic.Bool
	s := startStack(t, devstack.FunctionOptions{Hold: func(fn string, m events.SQSMessage) time.Duration {
		if fn == "notify" && !rewritten.Load() {
			return time.Second
		}
		return 0
	}})
	ctx := context.Background()
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))

	var j job.Job
	eventually(t, 30*time.Second, "the llm stage done", func() bool {
		var err error
		j, err = s.fns.Jobs.Get(ctx, id)
		return err == nil && j.Stage == job.StageNotify && len(j.Critique) > 0
	})
	db, key := s.env.Clients.DynamoDB, map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: schema.PrefixJob + string(id)}}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.res.JobsTable), Key: key,
		UpdateExpression: aws.String("SET critique = :c, sweep = :s REMOVE critique_ref, live"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberB{Value: j.Critique}, ":s": &types.AttributeValueMemberS{Value: "job"}}}); err != nil {
		t.Fatal(err)
	}
	rewritten.Store(true)

	eventually(t, 30*time.Second, "the email", func() bool { return len(emailsFor(t, s.env.SES, cl)) >= 1 })
	eventually(t, 10*time.Second, "the job succeeded", func() bool {
		got, err := s.fns.Jobs.Get(ctx, id)
		return err == nil && got.Status == job.StatusSucceeded
	})
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 1 || !strings.Contains(emails[0].Body.Text, "TODO") {
		t.Fatalf("%d emails; want one with the critique's finding (a TODO): %+v", len(emails), emails)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.res.JobsTable), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, attr := range []string{schema.Sweep, schema.Live} {
		if _, ok := out.Item[attr]; ok {
			t.Errorf("the finished job is still in a live index (%s)", attr)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := len(emailsFor(t, s.env.SES, cl)); got != 1 {
		t.Fatalf("%d emails, want 1", got)
	}
}
