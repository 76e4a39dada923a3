package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// sampleCritique is a critique of the size the llm stage stores for a
// small change (a few findings with their code): about 2.5 KB of JSON.
func sampleCritique(t *testing.T) []byte {
	t.Helper()
	c := critic.Critique{Critic: "offline/v1", Summary: "Two debugging leftovers and a TODO in the refund path.", Files: 2, Additions: 40, Deletions: 3}
	for i := range 6 {
		c.Findings = append(c.Findings, critic.Finding{
			File: fmt.Sprintf("internal/refund/path%d.go", i), Line: 10 + 7*i, Severity: "minor", Rule: fmt.Sprintf("debug-leftover-%d", i),
			Message: fmt.Sprintf("A debugging print (fmt.Println of the request %d) is left in the refund path; it writes the customer's account to standard output on every refund.", i),
		})
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 1500 {
		t.Fatalf("the sample critique is %d bytes: too small to show anything", len(b))
	}
	return b
}

// rawJob reads a job's item as stored.
func rawJob(t *testing.T, db *dynamodb.Client, table string, id job.ID) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: schema.PrefixJob + string(id)}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// stuck lists the jobs StuckJobs passes for before.
func stuck(t *testing.T, jobs store.Jobs, before time.Time) []job.ID {
	t.Helper()
	var ids []job.ID
	if err := jobs.StuckJobs(context.Background(), before, func(j job.Job) error { ids = append(ids, j.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

// A job's critique is written in an item of its own: after the llm
// stage the job item stays under 1 KB, so notify's writes bill one unit,
// and Get reads the critique back byte for byte. The live index's keys
// (live, created_at) do not move with a stage's write.
// Rules: R-COST-6, R-COST-1.
func TestJob_CritiqueApartJobItemUnderOneKB(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	db := env.Clients.DynamoDB
	jobs := dynamo.NewJobs(db, res.JobsTable, nil)
	jobs.Retention = 90 * 24 * time.Hour
	ctx := context.Background()

	crit := sampleCritique(t)
	j := storetest.NewJob("cl-apart", 1)
	storetest.Create(t, jobs, j, "k-apart", "b-apart")
	if err := jobs.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{Diff: &store.StoredDiff{Ref: "diffs/x", SHA256: "x"}}); err != nil {
		t.Fatal(err)
	}
	before := rawJob(t, db, res.JobsTable, j.ID)
	if err := jobs.Advance(ctx, j.ID, job.StageLLM, 1, job.StatusInProgress, store.JobWrite{Critique: crit}); err != nil {
		t.Fatal(err)
	}
	item := rawJob(t, db, res.JobsTable, j.ID)
	if _, inline := item["critique"]; inline {
		t.Fatal("the critique is inline in the job item")
	}
	if n := dynamo.ItemSize(item); n >= 1024 {
		t.Fatalf("the job item after llm is %d bytes: over 1 KB (a notify write bills %d units)", n, (n+1023)/1024)
	}
	// The critique's own item, compressed with the critiques'
	// dictionary (compact.go), is one write unit too.
	ref, _ := item["critique_ref"].(*types.AttributeValueMemberS)
	if ref == nil {
		t.Fatal("the job item names no critique item")
	}
	ci, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(res.JobsTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: schema.PrefixJob + string(j.ID) + "#critique#" + ref.Value}}})
	if err != nil || len(ci.Item) == 0 {
		t.Fatalf("the critique item: %v, %d attributes", err, len(ci.Item))
	}
	if n := dynamo.ItemSize(ci.Item); n >= 1024 {
		t.Fatalf("the critique item of a %d-byte critique is %d bytes: over 1 KB", len(crit), n)
	}
	t.Logf("job item %d bytes, critique %d bytes in an item of %d", dynamo.ItemSize(item), len(crit), dynamo.ItemSize(ci.Item))
	for _, k := range []string{schema.Live, schema.CreatedAt} {
		if fmt.Sprint(item[k]) != fmt.Sprint(before[k]) {
			t.Fatalf("the live index key %s moved with a stage's write: %v, then %v", k, before[k], item[k])
		}
	}
	got, err := jobs.Get(ctx, j.ID)
	if err != nil || string(got.Critique) != string(crit) {
		t.Fatalf("Get after llm: %v, critique read back %v", err, string(got.Critique) == string(crit))
	}
	if err := jobs.SetStatus(ctx, j.ID, job.StageNotify, job.StatusInProgress, store.JobWrite{}); err != nil {
		t.Fatal(err)
	}
	if got, err := jobs.Get(ctx, j.ID); err != nil || string(got.Critique) != string(crit) {
		t.Fatalf("Get after notify's write: %v, critique kept %v", err, string(got.Critique) == string(crit))
	}
	// A job a minute old, just written, is live and not stuck; an hour
	// on it is.
	if ids := stuck(t, jobs, time.Now().Add(-time.Minute)); len(ids) != 0 {
		t.Fatalf("a job written just now is stuck: %v", ids)
	}
	if ids := stuck(t, jobs, time.Now().Add(time.Hour)); len(ids) != 1 || ids[0] != j.ID {
		t.Fatalf("stuck an hour on: %v, want [%s]", ids, j.ID)
	}
	if err := jobs.FinishNotify(ctx, j.ID, 1, job.StatusSucceeded, 0); err != nil {
		t.Fatal(err)
	}
	if ids := stuck(t, jobs, time.Now().Add(time.Hour)); len(ids) != 0 {
		t.Fatalf("a finished job is stuck: %v", ids)
	}
}

// A job written by the layout before (the critique inline in the job
// item, the live index keyed by sweep and updated_at) still reads and
// settles on the new code: Get returns its critique, the sweep finds it
// stuck in the old index, its next write moves it to the new one (and
// passes it once), a new critique drops the inline one, and finishing
// takes it out of both. A deployed stack updated in place keeps its
// jobs in flight (docs/operations.md).
// Rules: R-COST-6, R-COST-1.
func TestJob_InlineCritiqueLayoutSettles(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	db := env.Clients.DynamoDB
	jobs := dynamo.NewJobs(db, res.JobsTable, nil)
	ctx := context.Background()

	crit := sampleCritique(t)
	hourAgo := time.Now().UTC().Add(-time.Hour)
	put := func(cl string, stage job.Stage) job.Job {
		t.Helper()
		j := storetest.NewJob(cl, 1)
		j.Stage, j.Status, j.Critique = stage, job.StatusInProgress, crit
		j.CreatedAt, j.UpdatedAt = hourAgo, hourAgo
		item, err := attributevalue.MarshalMap(dynamo.JobRecord(j))
		if err != nil {
			t.Fatal(err)
		}
		// The item as the layout before wrote it: job.Job's attributes
		// (the critique among them) and the old live index's attribute.
		item["pk"] = &types.AttributeValueMemberS{Value: schema.PrefixJob + string(j.ID)}
		item["kind"] = &types.AttributeValueMemberS{Value: "job"}
		item["idempotency_key_sha256"] = &types.AttributeValueMemberS{Value: "k-" + cl}
		item[schema.Sweep] = &types.AttributeValueMemberS{Value: "job"}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(res.JobsTable), Item: item}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	atNotify := put("cl-old-notify", job.StageNotify)
	atLLM := put("cl-old-llm", job.StageLLM)

	for _, j := range []job.Job{atNotify, atLLM} {
		got, err := jobs.Get(ctx, j.ID)
		if err != nil || string(got.Critique) != string(crit) || got.Stage != j.Stage {
			t.Fatalf("Get of an old-layout job: %v, stage %s, critique read %v", err, got.Stage, string(got.Critique) == string(crit))
		}
	}
	ids := stuck(t, jobs, time.Now().Add(-time.Minute))
	if len(ids) != 2 {
		t.Fatalf("the sweep found %v among old-layout jobs stuck an hour, want both", ids)
	}

	// Notify's write moves the job to the new index, the critique kept.
	if err := jobs.SetStatus(ctx, atNotify.ID, job.StageNotify, job.StatusInProgress, store.JobWrite{}); err != nil {
		t.Fatal(err)
	}
	item := rawJob(t, db, res.JobsTable, atNotify.ID)
	if _, old := item[schema.Sweep]; old {
		t.Fatal("an old-layout job written by the new code is still in the old index")
	}
	if _, live := item[schema.Live]; !live {
		t.Fatal("an old-layout job written by the new code is not in the live index")
	}
	if got, err := jobs.Get(ctx, atNotify.ID); err != nil || string(got.Critique) != string(crit) {
		t.Fatalf("the old-layout job after a write: %v, critique kept %v", err, string(got.Critique) == string(crit))
	}
	if ids := stuck(t, jobs, time.Now().Add(time.Hour)); len(ids) != 2 || strings.Count(fmt.Sprint(ids), string(atNotify.ID)) != 1 {
		t.Fatalf("the sweep an hour on found %v: want both jobs, each once", ids)
	}

	// A new critique on an old-layout job replaces the inline one.
	fresh := []byte(`{"critic":"offline/v1","summary":"again","findings":[]}`)
	if err := jobs.Advance(ctx, atLLM.ID, job.StageLLM, 2, job.StatusInProgress, store.JobWrite{Critique: fresh}); err != nil {
		t.Fatal(err)
	}
	item = rawJob(t, db, res.JobsTable, atLLM.ID)
	if _, inline := item["critique"]; inline {
		t.Fatal("the inline critique stayed beside the new one")
	}
	if got, err := jobs.Get(ctx, atLLM.ID); err != nil || string(got.Critique) != string(fresh) {
		t.Fatalf("the old-layout job's new critique: %v, %q", err, got.Critique)
	}

	// Settled: out of both indexes.
	if err := jobs.FinishNotify(ctx, atNotify.ID, 1, job.StatusSucceeded, 0); err != nil {
		t.Fatal(err)
	}
	if err := jobs.SetStatus(ctx, atLLM.ID, job.StageNotify, job.StatusSucceeded, store.JobWrite{}); err != nil {
		t.Fatal(err)
	}
	if ids := stuck(t, jobs, time.Now().Add(time.Hour)); len(ids) != 0 {
		t.Fatalf("finished old-layout jobs are still stuck: %v", ids)
	}
}
