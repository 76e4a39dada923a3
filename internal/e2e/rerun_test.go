package e2e

import (
	"context"
	"encoding/json"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/wire"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/testenv"
)

// R-RERUN-1: "Reprocessing a succeeded job with identical
// review_version is not allowed as a new send operation; it should return
// prior success. Reprocessing is allowed as a versioned rerun only with a new
// review_version (e.g., v3 -> v4), which creates new delivery intents under
// new keys." A lower version after a higher one is stale (409).
func TestVersionedRerun_V3V4_RepeatSendsNothing_V2IsStale(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	rcpt := []string{"ann@example.com", "bo@example.com"}

	v3 := accept(t, s, "v3-"+cl, sample(t, cl, 3, rcpt...))
	s.waitJob(v3, 30*time.Second, job.StatusSucceeded)
	// The same version under another key: the prior result, no send.
	resp, b := s.post("v3-again-"+cl, sample(t, cl, 3, rcpt...))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), string(v3)) || !strings.Contains(string(b), `"status":"succeeded"`) {
		t.Fatalf("v3 again: %d %s, want 200 with the succeeded v3 job", resp.StatusCode, b)
	}

	v4 := accept(t, s, "v4-"+cl, sample(t, cl, 4, rcpt...))
	if v4 == v3 {
		t.Fatal("v4 reused v3's job")
	}
	s.waitJob(v4, 30*time.Second, job.StatusSucceeded)
	if row, err := s.fns.Deliveries.Get(context.Background(), delivery.ID(job.ChangelistKey("generic", cl), "ann@example.com", 4)); err != nil || row.ReviewVersion != 4 || row.NotifiedAt.IsZero() {
		t.Fatalf("v4: ann's v4 row %+v %v, want a sent row under v4's key", row.Status, err)
	}
	// Repeating v4 after success: nothing new.
	if resp, b := s.post("v4-again-"+cl, sample(t, cl, 4, rcpt...)); resp.StatusCode != http.StatusOK {
		t.Fatalf("v4 again: %d %s", resp.StatusCode, b)
	}
	// v2 after v4: stale.
	resp, b = s.post("v2-"+cl, sample(t, cl, 2, rcpt...))
	var p api.Problem
	_ = json.Unmarshal(b, &p)
	if resp.StatusCode != http.StatusConflict || p.Field != "review_version" || !strings.Contains(p.Message, "4") {
		t.Fatalf("v2 after v4: %d %s, want 409 naming the current version 4", resp.StatusCode, b)
	}

	time.Sleep(1500 * time.Millisecond)
	emails := emailsFor(t, s.env.SES, cl)
	perVersion := map[int]int{}
	for _, e := range emails {
		perVersion[versionOf(e)] += len(e.Destination.To)
	}
	if perVersion[3] != 2 || perVersion[4] != 2 || perVersion[2] != 0 || len(emails) != 4 {
		t.Fatalf("emails per version %v (total %d), want v3:2 v4:2 v2:0", perVersion, len(emails))
	}
}

// R-OUTBOX-9: "Permanent failures (invalid recipient, policy rejection)
// SHOULD mark recipient delivery row failed and require operator or caller
// intervention"; R-OUTBOX-8: the job is succeeded only when every required
// recipient has notified_at. GET /jobs shows each recipient's state.
func TestPermanentRejection_RowFailedPermanent_JobNeedsIntervention(t *testing.T) {
	t.Parallel()
	var s *stack
	inj := fault.New()
	s = startStack(t, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}})
	inj.Add(fault.Rule{Service: "SESv2", Operation: "SendEmail", Times: 1, Kind: fault.Reject})
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "only@example.com"))
	v := s.waitJob(id, 30*time.Second, job.StatusNeedsIntervention)
	if len(v.Deliveries) != 1 || v.Deliveries[0].Status != delivery.StatusFailedPermanent || v.Deliveries[0].LastErrorClass != "POLICY_REJECTED" || v.Deliveries[0].NotifiedAt != nil {
		t.Fatalf("deliveries %+v, want one failed_permanent POLICY_REJECTED without notified_at", v.Deliveries)
	}
	time.Sleep(time.Second)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 0 {
		t.Fatalf("%d emails after a permanent rejection, want 0", n)
	}
}

// The sweeper (DESIGN: "stuck jobs, stuck 'sending', sent-without-evidence"):
// a job accepted but never enqueued is enqueued and completes; a row marked
// sent with no provider evidence after the window, once the evidence path
// has caught up past it, moves to reconciling, is never sent again, and its
// job needs intervention (R-RECON-1).
// Rules: R-STAGE-8.
func TestSweeper_RecoversUnenqueuedJob_FlagsSentWithoutEvidence(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{NoEventBridge: true}, func(c *config.Config) {
		c.Sweep.StuckAfter, c.Sweep.EvidenceWindow = time.Millisecond, time.Millisecond
	})
	ctx := context.Background()
	cl := testenv.Prefix(t)
	// A job persisted by intake whose enqueue never happened.
	now := time.Now().UTC().Add(-time.Hour)
	j := job.Job{ID: job.NewID("generic", cl, 1), Source: "generic", ChangelistID: cl, ReviewVersion: 1, Title: "t",
		URL: "https://x.example/1", Author: "a", Recipients: []string{"late@example.com"}, Status: job.StatusAccepted,
		Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	var m map[string]any
	_ = json.Unmarshal(sample(t, cl, 1), &m)
	ref, sha, err := s.fns.Blobs.Put(ctx, "diffs", []byte(m["diff"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	j.DiffRef, j.DiffSHA256 = ref, sha
	if res, err := s.fns.Jobs.Create(ctx, store.CreateRequest{Job: j, IdempotencyKeySHA: "x", RequestSHA256: "y", ResponseStatus: 202, ResponseBody: []byte("{}"), TTL: time.Hour}); err != nil || res.Outcome != store.Created {
		t.Fatalf("create: %v %v", res.Outcome, err)
	}
	sw := s.fns.Sweeper
	rep, err := sw.Run(ctx)
	if err != nil || rep.JobsRequeued != 1 {
		t.Fatalf("sweep: %+v %v, want 1 job requeued", rep, err)
	}
	s.waitJob(j.ID, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
	// With no event bridge, no provider evidence arrives. While the
	// evidence path has recorded nothing after the send, silence proves
	// nothing: the row is left alone.
	time.Sleep(10 * time.Millisecond)
	rep, err = sw.Run(ctx)
	if err != nil || rep.OrderingViolations != 0 {
		t.Fatalf("second sweep: %+v %v, want no ordering violation while the evidence path is behind", rep, err)
	}
	// Once it has caught up past the send — an event of later mail
	// recorded, the feedback queue drained past the send and the bound —
	// and no event names the row, the row is an ordering-contract suspect.
	later := time.Now().Add(s.cfg.EvidenceMargin + time.Second)
	if err := s.fns.Evidence.Advance(ctx, "", later); err != nil {
		t.Fatal(err)
	}
	if err := s.fns.Evidence.Drain(ctx, "", later); err != nil {
		t.Fatal(err)
	}
	rep, err = sw.Run(ctx)
	if err != nil || rep.OrderingViolations != 1 || rep.HeldDeliveries != 1 {
		t.Fatalf("third sweep: %+v %v, want 1 ordering violation, 1 held delivery", rep, err)
	}
	// Regression: the job kept reading succeeded while its row was held.
	s.waitJob(j.ID, 10*time.Second, job.StatusNeedsIntervention)
	var rows []delivery.Row
	_ = s.fns.Deliveries.Unsettled(ctx, time.Time{}, func(r delivery.Row) error {
		if r.JobID == j.ID {
			rows = append(rows, r)
		}
		return nil
	})
	if len(rows) != 1 || rows[0].Status != delivery.StatusReconciling || delivery.Decide(rows[0], time.Now()) != delivery.Hold {
		t.Fatalf("rows %+v, want one row in reconciling, held from further sends", rows)
	}
	if !strings.Contains(s.logText(), `"OrderingViolations":1`) {
		t.Error("no OrderingViolations metric was emitted")
	}
}
