package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/vote"
)

// Jobs, delivery rows, audit items, reviewer rosters, votes and dismissals carry a TTL of
// the retention from when they are written; the changelist head (which
// keeps a repeat of an expired version from being reviewed again),
// preferences, suppressions, reviewer directory entries and a
// repository's learnings (R-LEARN-1) carry none. A version whose job expired is refused as already reviewed
// (store outcome Stale at that very version).
// Rules: R-COST-2.
func TestRetention_WhatExpiresAndWhatStays(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	db := env.Clients.DynamoDB
	jobs, rows := dynamo.NewJobs(db, res.JobsTable, clock), dynamo.NewDeliveries(db, res.DeliveriesTable, clock)
	jobs.Retention, rows.Retention = 90*24*time.Hour, 90*24*time.Hour
	ctx := context.Background()
	j := storetest.NewJob("cl-retention", 1)
	storetest.Create(t, jobs, j, "k-ret", "b")
	if _, _, err := rows.Ensure(ctx, storetest.NewRow("d_ret")); err != nil {
		t.Fatal(err)
	}
	if err := jobs.RecordDeliveryNote(ctx, "d_ret", j.ID, "n1", store.DeliveryNote{Action: "resolve_sent", Note: "checked", By: "op", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := dynamo.NewPreferences(db, res.JobsTable, clock).Suppress(ctx, "rid-1", "bounce", now); err != nil {
		t.Fatal(err)
	}
	rosters := dynamo.NewRosters(db, res.JobsTable, clock)
	rosters.Retention = 90 * 24 * time.Hour
	if _, err := rosters.Apply(ctx, "github", "o/r#1", []reviewers.Event{{Username: "octocat", Kind: reviewers.Requested, At: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamo.NewDirectory(db, res.JobsTable, clock).Set(ctx, "github", "octocat", "octo@example.com", "op"); err != nil {
		t.Fatal(err)
	}
	votes := dynamo.NewVotes(db, res.JobsTable, clock)
	votes.Retention = 90 * 24 * time.Hour
	if _, err := votes.Record(ctx, vote.Vote{DeliveryID: "d_ret", FindingID: "f1", Choice: vote.Useful, Rule: "r", VotedAt: now}); err != nil {
		t.Fatal(err)
	}
	dismissals := dynamo.NewDismissals(db, res.JobsTable, clock)
	dismissals.Retention = 90 * 24 * time.Hour
	if _, err := dismissals.Mark(ctx, "generic:cl-retention", "rid-1", "k1", vote.Wrong, now); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamo.NewLearnings(db, res.JobsTable, clock).Tally(ctx, vote.Tally{Repository: "generic:acme/ret", Rule: "r", Reader: "rid-1", Choice: vote.Wrong, At: now}); err != nil {
		t.Fatal(err)
	}
	want := now.Add(90 * 24 * time.Hour).Unix()
	ttl := func(table, keyName, key string) int64 {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{keyName: &types.AttributeValueMemberS{Value: key}}})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("%s %s: %v", table, key, err)
		}
		n, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	for what, got := range map[string]int64{
		"job":          ttl(res.JobsTable, "pk", schema.PrefixJob+string(j.ID)),
		"delivery row": ttl(res.DeliveriesTable, "delivery_id", "d_ret"),
		"audit item":   ttl(res.JobsTable, "pk", schema.PrefixAudit+"d_ret"),
		"roster":       ttl(res.JobsTable, "pk", schema.PrefixRoster+job.ChangelistKey("github", "o/r#1")),
		"vote":         ttl(res.JobsTable, "pk", schema.PrefixVote+"d_ret#f1"),
		"dismissals":   ttl(res.JobsTable, "pk", schema.PrefixDismissal+"generic:cl-retention#rid-1"),
	} {
		if got != want {
			t.Errorf("%s expires at %d, want %d (now + 90 days)", what, got, want)
		}
	}
	for what, got := range map[string]int64{
		"changelist head": ttl(res.JobsTable, "pk", schema.PrefixChangelist+job.ChangelistKey("generic", "cl-retention")),
		"suppression":     ttl(res.JobsTable, "pk", schema.PrefixSuppression+"rid-1"),
		"directory entry": ttl(res.JobsTable, "pk", schema.PrefixDirectory+"github#octocat"),
		"learnings":       ttl(res.JobsTable, "pk", schema.PrefixLearning+vote.RepoDigest("generic:acme/ret")),
	} {
		if got != 0 {
			t.Errorf("%s expires (%d): it must stay", what, got)
		}
	}
	// DynamoDB's TTL deletes the job and its idempotency record; the
	// head stays: the same version again is refused, not reviewed again.
	for _, pk := range []string{schema.PrefixJob + string(j.ID)} {
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(res.JobsTable),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}); err != nil {
			t.Fatal(err)
		}
	}
	r := storetest.Create(t, jobs, j, "k-ret-2", "b2")
	if r.Outcome != store.Stale || r.CurrentVersion != 1 {
		t.Errorf("the expired version again: %+v, want Stale at version 1", r)
	}
}
