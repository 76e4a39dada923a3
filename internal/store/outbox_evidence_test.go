package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The watermark moves forward only, and never past an event the feedback
// function has received but not recorded.
// Rules: R-EVIDENCE-2.
func TestEvidence_WatermarkHeldBackByPendingEvents(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := store.NewEvidence(env.Clients.DynamoDB, res.JobsTable, func() time.Time { return now })
	ctx := context.Background()
	if wm, err := e.Watermark(ctx, "set"); err != nil || !wm.IsZero() {
		t.Fatalf("no event yet: %v %v", wm, err)
	}
	t1, t2 := now.Add(-time.Minute), now.Add(-30*time.Second)
	if err := e.Advance(ctx, "set", t2); err != nil {
		t.Fatal(err)
	}
	if err := e.Advance(ctx, "set", t1); err != nil { // an older event, later
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Equal(t2) {
		t.Fatalf("watermark %v, want %v (forward only)", wm, t2)
	}
	if err := e.HoldBack(ctx, "set", map[string]time.Time{"m-1": t1, "m-2": t2}); err != nil {
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Before(t1) {
		t.Fatalf("watermark %v with an event of %v pending; want before it", wm, t1)
	}
	if err := e.Release(ctx, "set", []string{"m-1", "m-2"}); err != nil {
		t.Fatal(err)
	}
	if wm, _ := e.Watermark(ctx, "set"); !wm.Equal(t2) {
		t.Fatalf("watermark %v after the release, want %v", wm, t2)
	}
	if wm, _ := e.Watermark(ctx, "other-set"); !wm.IsZero() {
		t.Fatal("configuration sets share a watermark")
	}
	// One probe per need (a notifier probes once now is past need);
	// another once the last is older than every.
	need := now.Add(-time.Second)
	if ok, err := e.ClaimProbe(ctx, "set", need, time.Minute); err != nil || !ok {
		t.Fatalf("first probe: %v %v", ok, err)
	}
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
		t.Fatal("a second probe for the same need")
	}
	now = now.Add(2 * time.Minute)
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); !ok {
		t.Fatal("no new probe after the last one's events never came")
	}
	if err := e.Advance(ctx, "set", need); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if ok, _ := e.ClaimProbe(ctx, "set", need, time.Minute); ok {
		t.Fatal("a probe although the watermark is past need")
	}
}
