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
