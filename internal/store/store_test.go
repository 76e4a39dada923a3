package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/testenv"
)

// These are adapter tests: they run against DynamoDB Local, started by
// `make test`.

func newJobs(t *testing.T) *store.Jobs {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	return store.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)
}

func newJob(cl string, version int) job.Job {
	now := time.Now().UTC()
	return job.Job{ID: job.NewID("generic", cl, version), Source: "generic", ChangelistID: cl, ReviewVersion: version,
		Title: "t", URL: "https://x.example/1", Author: "a", Recipients: []string{"r@example.com"},
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
}

func create(t *testing.T, s *store.Jobs, j job.Job, key, bodySHA string) store.CreateResult {
	t.Helper()
	res, err := s.Create(context.Background(), store.CreateRequest{Job: j, IdempotencyKeySHA: key, RequestSHA256: bodySHA,
		ResponseStatus: 202, ResponseBody: []byte(`{"job_id":"` + string(j.ID) + `"}`), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// R-INTAKE-1: "If an insert violates that unique constraint, the service
// MUST treat it as a duplicate request and return the existing job instead
// of creating a second job."
func TestCreate_DuplicateKeyReturnsOriginalResponse(t *testing.T) {
	s := newJobs(t)
	j := newJob("cl-1", 1)
	if got := create(t, s, j, "k1", "b1"); got.Outcome != store.Created {
		t.Fatalf("first create: outcome %v", got.Outcome)
	}
	got := create(t, s, j, "k1", "b1")
	if got.Outcome != store.Replayed || got.ResponseStatus != 202 || string(got.ResponseBody) != `{"job_id":"`+string(j.ID)+`"}` {
		t.Fatalf("duplicate: %+v", got)
	}
	if got.Job.ID != j.ID || got.Job.Status != job.StatusAccepted {
		t.Fatalf("duplicate did not return the original job: %+v", got.Job)
	}
}

// R-INTAKE-1: "idempotency_key MUST be unique for job creation
// requests" — the same key with another request is refused (HTTP 422).
// Rules: R-INTAKE-2.
func TestCreate_SameKeyDifferentRequestRefused(t *testing.T) {
	s := newJobs(t)
	create(t, s, newJob("cl-1", 1), "k1", "b1")
	if got := create(t, s, newJob("cl-1", 2), "k1", "b2"); got.Outcome != store.KeyReused {
		t.Fatalf("outcome %v, want KeyReused", got.Outcome)
	}
	if _, err := s.Get(context.Background(), job.NewID("generic", "cl-1", 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused request created a job: %v", err)
	}
}

// R-INTAKE-3: reprocessing is "Blocked when the request uses the same
// review_version (no-op; return existing result)".
func TestCreate_SameVersionOtherKeyReturnsExistingJob(t *testing.T) {
	s := newJobs(t)
	j := newJob("cl-1", 3)
	create(t, s, j, "k1", "b1")
	got := create(t, s, j, "k2", "b2")
	if got.Outcome != store.VersionExists || got.Job.ID != j.ID {
		t.Fatalf("outcome %v job %s, want VersionExists %s", got.Outcome, got.Job.ID, j.ID)
	}
}

// R-INTAKE-3 and R-RERUN-1: only a strictly higher review_version starts a
// new logical attempt; a lower one after a higher one is stale.
func TestCreate_HigherVersionStarts_LowerIsStale(t *testing.T) {
	s := newJobs(t)
	create(t, s, newJob("cl-1", 3), "k3", "b3")
	if got := create(t, s, newJob("cl-1", 4), "k4", "b4"); got.Outcome != store.Created {
		t.Fatalf("v4 after v3: outcome %v, want Created", got.Outcome)
	}
	got := create(t, s, newJob("cl-1", 2), "k2", "b2")
	if got.Outcome != store.Stale || got.CurrentVersion != 4 {
		t.Fatalf("v2 after v4: %+v, want Stale with current 4", got)
	}
	v, id, err := s.LatestVersion(context.Background(), "generic", "cl-1")
	if err != nil || v != 4 || id != job.NewID("generic", "cl-1", 4) {
		t.Fatalf("head: %d %s %v", v, id, err)
	}
}

// Concurrent first requests, for the same key or for the same version under
// different keys, create exactly one job; every other caller gets it back.
func TestCreate_ConcurrentFirstRequests_ExactlyOneJob(t *testing.T) {
	s := newJobs(t)
	for _, sameKey := range []bool{true, false} {
		t.Run(fmt.Sprintf("sameKey=%v", sameKey), func(t *testing.T) {
			j := newJob(fmt.Sprintf("race-%v", sameKey), 1)
			const n = 16
			outcomes := make([]store.Outcome, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := "k"
					if !sameKey {
						key = fmt.Sprintf("k%d", i)
					}
					res, err := s.Create(context.Background(), store.CreateRequest{Job: j, IdempotencyKeySHA: key, RequestSHA256: "b",
						ResponseStatus: 202, ResponseBody: []byte("{}"), TTL: time.Hour})
					if err != nil {
						t.Error(err)
						return
					}
					outcomes[i] = res.Outcome
				}()
			}
			wg.Wait()
			created := 0
			for _, o := range outcomes {
				switch o {
				case store.Created:
					created++
				case store.Replayed, store.VersionExists:
				default:
					t.Errorf("unexpected outcome %v", o)
				}
			}
			if created != 1 {
				t.Fatalf("%d creates succeeded, want exactly 1 (outcomes %v)", created, outcomes)
			}
		})
	}
}

func newDeliveries(t *testing.T, now func() time.Time) *store.Deliveries {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	return store.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, now)
}

func newRow(id string) delivery.Row {
	now := time.Now().UTC()
	return delivery.Row{ID: id, JobID: "j_x", ChangelistKey: "generic:cl", Recipient: "r@example.com", ReviewVersion: 1,
		Status: delivery.StatusPending, Message: delivery.Message{Subject: "s", HTML: "<p>h</p>", Text: "t", TemplateVersion: "v", ContentSHA256: "c"},
		CreatedAt: now, UpdatedAt: now}
}

// R-OUTBOX-1: "Persist an outbox/delivery-log row per recipient keyed by
// that tuple." A second Ensure returns the stored row unchanged, so the
// rendered message is never replaced.
// Rules: R-OUTBOX-2.
func TestEnsure_ExistingRowReturnedUnchanged(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	r := newRow("d_1")
	if _, created, err := d.Ensure(ctx, r); err != nil || !created {
		t.Fatalf("first ensure: created=%v err=%v", created, err)
	}
	other := r
	other.Message.HTML = "<p>changed</p>"
	got, created, err := d.Ensure(ctx, other)
	if err != nil || created || got.Message.HTML != "<p>h</p>" {
		t.Fatalf("second ensure: created=%v html=%q err=%v", created, got.Message.HTML, err)
	}
}

// the atomic claim (R-OUTBOX-3): of many workers claiming one row at once, exactly
// one wins; the claim increments attempts in the same write.
func TestClaim_ExactlyOneConcurrentWorkerWins(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_2")); err != nil {
		t.Fatal(err)
	}
	const n = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.Claim(ctx, "d_2", fmt.Sprintf("tok%d", i), time.Minute)
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.Is(err, store.ErrConflict):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d claims won, want 1", wins)
	}
	r, _ := d.Get(ctx, "d_2")
	if r.Status != delivery.StatusSending || r.Attempts != 1 || r.LeaseUntil.IsZero() {
		t.Fatalf("row after claim: %+v", r)
	}
}

// R-OUTBOX-4: "Persist DB update in a single write: set
// notification_id, set notified_at = now(), and mark delivery status sent" —
// only under the worker's own claim; and a sent row can never be claimed
// again ("If notified_at is set, do not send again").
func TestMarkSent_OneWriteUnderOwnClaim_ThenNeverClaimable(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_3")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_3", "mine", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, "d_3", "not-mine", "ses-1"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("mark under another token: %v, want ErrConflict", err)
	}
	r, err := d.MarkSent(ctx, "d_3", "mine", "ses-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.StatusSent || r.NotificationID != "ses-1" || r.NotifiedAt.IsZero() || r.ClaimToken != "" {
		t.Fatalf("row after mark: %+v", r)
	}
	if _, err := d.Claim(ctx, "d_3", "again", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("claim of a sent row: %v, want ErrConflict", err)
	}
	if delivery.Decide(r, time.Now()) != delivery.Skip {
		t.Fatal("a sent row must be skipped")
	}
}

// R-OUTBOX-6: a row whose send may have happened is only returned to
// sending after its lease expired; never while a worker holds it, and never
// once notified_at is set.
func TestRequeue_OnlyAfterLeaseExpired(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	d := newDeliveries(t, clock)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_4")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "d_4", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Requeue(ctx, "d_4", "IN_FLIGHT"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue under a live lease: %v, want ErrConflict", err)
	}
	now = now.Add(2 * time.Minute)
	r, err := d.Requeue(ctx, "d_4", "IN_FLIGHT")
	if err != nil || r.Status != delivery.StatusFailedTransient {
		t.Fatalf("requeue after the lease: %+v %v", r, err)
	}
	if _, err := d.Backfill(ctx, "d_4", "ses-9", now); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Requeue(ctx, "d_4", "IN_FLIGHT"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("requeue of a backfilled row: %v, want ErrConflict", err)
	}
}

// R-EVIDENCE-5: a transient bounce makes the row failed_transient again
// ("isPermanentBounce ? 'suppressed' : 'failed_transient'"). Only a bounce
// of the row's latest send does so, at most max times; and a late Send or
// Delivery event of the bounced message (SNS keeps no order) is not
// evidence for the resend, which would otherwise be backfilled as sent
// without a copy reaching the reader.
func TestResendAfterNotDelivered_OnlyLatestSend_LateEventsOfBouncedMessageIgnored(t *testing.T) {
	d := newDeliveries(t, nil)
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, newRow("d_b1")); err != nil {
		t.Fatal(err)
	}
	send := func(token, msgID string) {
		t.Helper()
		if _, err := d.Claim(ctx, "d_b1", token, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := d.MarkSent(ctx, "d_b1", token, msgID); err != nil {
			t.Fatal(err)
		}
	}
	send("t1", "ses-1")
	at := time.Now().UTC()
	if _, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-other", "TRANSIENT_BOUNCE", at, 2); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a bounce of another message: %v, want ErrConflict", err)
	}
	r, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-1", "TRANSIENT_BOUNCE", at, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.StatusFailedTransient || !r.NotifiedAt.IsZero() || r.NotificationID != "" || r.BounceResends != 1 || r.HasEvidence() {
		t.Fatalf("after the bounce: %+v", r)
	}
	// A late Delivery of the bounced message: ignored.
	r, _, err = d.RecordEvent(ctx, "d_b1", store.Event{Type: "Delivery", MessageID: "ses-1", At: at})
	if err != nil || r.HasEvidence() || delivery.Decide(r, time.Now()) != delivery.Claim {
		t.Fatalf("late delivery of the bounced message: %+v (%v); want it ignored and the row claimable", r, err)
	}
	send("t2", "ses-2")
	if r, _, _ = d.RecordEvent(ctx, "d_b1", store.Event{Type: "Delivery", MessageID: "ses-2", At: at}); r.Status != delivery.StatusDelivered {
		t.Fatalf("delivery of the resend: %q, want delivered", r.Status)
	}
	if _, err := d.ResendAfterNotDelivered(ctx, "d_b1", "ses-2", "TRANSIENT_BOUNCE", at, 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a bounce over the cap: %v, want ErrConflict", err)
	}
	if _, _, err := d.RecordEvent(ctx, "d_unknown", store.Event{Type: "Send", MessageID: "x", At: at}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("event for an unknown row: %v, want ErrNotFound", err)
	}
}
