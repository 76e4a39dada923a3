package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

type memBlobs struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, prefix string, data []byte) (string, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	b.objs[prefix+sha] = data
	return prefix + sha, sha, nil
}

type memQueue struct {
	mu   sync.Mutex
	msgs []job.Message
	fail bool
}

func (q *memQueue) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return errors.New("queue down")
	}
	q.msgs = append(q.msgs, m)
	return nil
}

const offlineSecret = "offline-intake-secret-0123456789"

func genericBody(version int, title string) []byte {
	b, _ := json.Marshal(map[string]any{"changelist_id": "acme-7", "review_version": version, "title": title,
		"url": "https://review.example.com/7", "author": "ana", "recipients": []string{"r@example.com"},
		"diff": "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"})
	return b
}

func post(in *api.Intake, key string, body []byte) (int, string, http.Header) {
	h := http.Header{}
	h.Set("Idempotency-Key", key)
	h.Set(webhook.SignatureHeader, webhook.Sign([]byte(offlineSecret), body))
	resp := in.Handle(context.Background(), webhook.Generic{Secret: []byte(offlineSecret)}, webhook.Request{Header: h.Get, Body: body})
	out := http.Header{}
	for k, v := range resp.Headers {
		out.Set(k, v)
	}
	return resp.StatusCode, resp.Body, out
}

// Intake's idempotency on the in-memory store (the jobs table's contract,
// by the conformance suite), no stack: a new request is accepted and
// enqueued once; the same key and body replays the first answer byte for
// byte and starts nothing; the key with another body is refused; another
// key for the same version answers the existing job; a higher version
// starts a new job, a lower one is stale; a version whose records expired
// is refused as already reviewed; a request whose enqueue failed is
// finished by its retry.
// Rules: R-INTAKE-1, R-INTAKE-2, R-INTAKE-3, R-INTAKE-5, R-STORE-1, R-COST-2.
func TestIntake_Idempotency_Offline(t *testing.T) {
	q := &memQueue{}
	in := &api.Intake{Jobs: memstore.NewJobs(nil), Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: q,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789")}

	jobs := in.Jobs.(*memstore.Jobs)
	code, first, _ := post(in, "k1", genericBody(1, "v1"))
	if code != http.StatusAccepted || len(q.msgs) != 1 {
		t.Fatalf("first: %d %s, %d enqueued", code, first, len(q.msgs))
	}
	// fetch picked the job up; a replay now starts nothing.
	j, _ := jobs.Get(context.Background(), q.msgs[0].JobID)
	j.Status = job.StatusInProgress
	jobs.Put(j)
	code, again, h := post(in, "k1", genericBody(1, "v1"))
	if code != http.StatusAccepted || again != first || h.Get("Idempotent-Replayed") != "true" || len(q.msgs) != 1 {
		t.Errorf("replay: %d %q replayed=%q, %d enqueued; want the first answer, nothing new", code, again, h.Get("Idempotent-Replayed"), len(q.msgs))
	}
	if code, body, _ := post(in, "k1", genericBody(1, "another title")); code != http.StatusUnprocessableEntity || !strings.Contains(body, "Idempotency-Key") {
		t.Errorf("key reused with another body: %d %s, want 422 naming the key", code, body)
	}
	if code, body, _ := post(in, "k2", genericBody(1, "v1")); code != http.StatusOK || !strings.Contains(body, `"status":"in_progress"`) {
		t.Errorf("same version, other key: %d %s, want 200 with the existing job", code, body)
	}
	if code, _, _ := post(in, "k3", genericBody(2, "v2")); code != http.StatusAccepted || len(q.msgs) != 2 {
		t.Errorf("higher version: %d, %d enqueued; want 202 and a new job", code, len(q.msgs))
	}
	// A version below the head that never had a job is stale; one that
	// had a job answers that job.
	if code, _, _ := post(in, "k6", genericBody(5, "v5")); code != http.StatusAccepted {
		t.Fatalf("v5: %d", code)
	}
	if code, body, _ := post(in, "k4", genericBody(4, "v4 late")); code != http.StatusConflict || !strings.Contains(body, "review_version") {
		t.Errorf("lower version: %d %s, want 409 naming review_version", code, body)
	}
	if code, _, _ := post(in, "k7", genericBody(1, "v1")); code != http.StatusOK {
		t.Errorf("a version that has its job, behind the head: %d, want 200", code)
	}

	// A version whose records expired (retention): refused, nothing
	// reviewed or sent again, and the answer says why.
	jobs.Expire(job.NewID("generic", "acme-7", 5))
	if code, body, _ := post(in, "k9", genericBody(5, "v5 again")); code != http.StatusConflict || !strings.Contains(body, "expired") {
		t.Errorf("an expired version again: %d %s, want 409 saying it expired", code, body)
	}

	// The job is recorded, the enqueue fails: 503; the retry with the same
	// key finishes the work (one message) and replays the answer.
	q.fail = true
	code, _, h = post(in, "k5", genericBody(8, "v8"))
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("enqueue down: %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	q.fail = false
	if code, _, _ := post(in, "k5", genericBody(8, "v8")); code != http.StatusAccepted || len(q.msgs) != 4 || q.msgs[3].JobID != job.NewID("generic", "acme-7", 8) {
		t.Errorf("retry: %d, enqueued %v; want the v8 job enqueued once", code, q.msgs)
	}
}

type downBlobs struct{}

func (downBlobs) Put(context.Context, string, []byte) (string, string, error) {
	return "", "", errors.New("s3 down")
}

// A job never names a diff that is not stored: the inline diff is stored
// before the job's transaction, so when storing it fails nothing is
// created (503, the caller retries), and when intake dies between the
// transaction and the enqueue, the sweeper's re-enqueue finds the diff
// (internal/explore's duplicate-webhooks scenario found the job
// dead-lettered NOT_FOUND when the diff was stored after the job).
// Rules: R-INTAKE-5.
func TestIntake_DiffStoredBeforeTheJob_Offline(t *testing.T) {
	q := &memQueue{}
	jobs := memstore.NewJobs(nil)
	in := &api.Intake{Jobs: jobs, Blobs: downBlobs{}, Queue: q, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour}
	code, _, h := post(in, "k1", genericBody(1, "v1"))
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("diff store down: %d, Retry-After %q; want 503", code, h.Get("Retry-After"))
	}
	if j, err := jobs.Get(context.Background(), job.NewID("generic", "acme-7", 1)); err == nil {
		t.Fatalf("the job %s (diff %s) was created though its diff was not stored", j.ID, j.DiffRef)
	}
	if len(q.msgs) != 0 {
		t.Errorf("%d messages enqueued", len(q.msgs))
	}
	blobs := &memBlobs{objs: map[string][]byte{}}
	in.Blobs = blobs
	if code, _, _ := post(in, "k1", genericBody(1, "v1")); code != http.StatusAccepted {
		t.Fatalf("retry: %d, want 202", code)
	}
	j, err := jobs.Get(context.Background(), job.NewID("generic", "acme-7", 1))
	if err != nil || blobs.objs[j.DiffRef] == nil {
		t.Errorf("job %v names diff %q, stored: %t", err, j.DiffRef, blobs.objs[j.DiffRef] != nil)
	}
}
