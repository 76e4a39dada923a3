package dynamo_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Preference records on DynamoDB Local: the conformance suite the
// in-memory store passes too.
// Rules: R-STORE-1, R-PREF-1, R-STORE-3.
func TestPreferences_DynamoDB(t *testing.T) {
	storetest.Preferences(t, func(t *testing.T) store.Preferences {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		return dynamo.NewPreferences(env.Clients.DynamoDB, res.JobsTable, nil)
	})
}

// A record the one-click unsubscribe wrote before the preference page
// existed (unsubscribed_all, the repositories set, no rev, no digest hour)
// reads as that reader's mutes with the defaults, and the page can save
// over it.
// Rules: R-PREF-1.
func TestPreferences_RecordFromBeforeThePage(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	ctx := context.Background()
	_, err := env.Clients.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &res.JobsTable, Item: map[string]types.AttributeValue{
		"pk":           &types.AttributeValueMemberS{Value: schema.PrefixPreference + "r_old"},
		"kind":         &types.AttributeValueMemberS{Value: "preference"},
		"updated_at":   &types.AttributeValueMemberS{Value: "2026-01-02T03:04:05.000000000Z"},
		"repositories": &types.AttributeValueMemberSS{Value: []string{"github:o/r"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.NewPreferences(env.Clients.DynamoDB, res.JobsTable, nil)
	p, err := s.Preferences(ctx, "r_old")
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != prefs.Instant || p.DigestHour != prefs.DefaultDigestHour || p.TimeZone != "UTC" || p.Rev != 0 ||
		!slices.Equal(p.Muted, []string{"github:o/r"}) || p.UpdatedAt.IsZero() {
		t.Fatalf("an old record reads %+v", p)
	}
	p.MinSeverity = prefs.SeverityWarning
	if _, err := s.SavePreferences(ctx, "r_old", p); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Preferences(ctx, "r_old"); err != nil || p.Rev != 1 || !p.Mutes("github:o/r") || p.MinSeverity != prefs.SeverityWarning {
		t.Fatalf("saved over an old record: %+v, %v", p, err)
	}
}
