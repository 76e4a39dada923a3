package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

func orderIntake(jobs *memstore.Jobs, q *memQueue) *api.Intake {
	return &api.Intake{Jobs: jobs, Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: q,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour,
		Versions: jobs, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789")}
}

// ghPush is a signed synchronize moving the pull request from before to
// head.
func ghPush(t *testing.T, delivery, head, before string) webhook.Request {
	return ghHook(t, "pull_request", "pull_request.synchronize.json", delivery, func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
		m["before"], m["after"] = before, head
	})
}

func sha(n int) string { return strings.Repeat(fmt.Sprint(n), 40) }

// Pushes whose webhooks come out of order, on the in-memory stores: x5's
// synchronize (naming x4) before x4's; x4's is answered 200 stale, naming
// the current version, creates nothing and enqueues nothing, however
// often it is redelivered. x5 is version 2, pending the host's word (its
// before was unknown); a push after x5 is version 3.
// Rules: R-SOURCE-6.
func TestIntake_LatePushIsStale_Offline(t *testing.T) {
	ctx := context.Background()
	jobs, q := memstore.NewJobs(nil), &memQueue{}
	in := orderIntake(jobs, q)
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	const cl = "Codertocat/Hello-World#2"
	opened := ghHook(t, "pull_request", "pull_request.opened.json", "d-open", func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha(3)
	})
	for i, step := range []struct {
		req     webhook.Request
		status  int
		version int
	}{
		{opened, http.StatusAccepted, 1},
		{ghPush(t, "d-x5", sha(5), sha(4)), http.StatusAccepted, 2},
		{ghPush(t, "d-x4", sha(4), sha(3)), http.StatusOK, 0},
		{ghPush(t, "d-x4", sha(4), sha(3)), http.StatusOK, 0},
		{ghPush(t, "d-x6", sha(6), sha(5)), http.StatusAccepted, 3},
	} {
		resp := in.Handle(ctx, gh, step.req)
		if resp.StatusCode != step.status {
			t.Fatalf("step %d: %d %s, want %d", i, resp.StatusCode, resp.Body, step.status)
		}
		if step.version == 0 {
			var st api.StaleHead
			if json.Unmarshal([]byte(resp.Body), &st) != nil || st.Status != "stale" || st.CurrentVersion != 2 || st.ChangelistID != cl {
				t.Fatalf("step %d: %s, want stale behind version 2", i, resp.Body)
			}
			continue
		}
		var acc api.Accepted
		if json.Unmarshal([]byte(resp.Body), &acc) != nil || acc.ReviewVersion != step.version {
			t.Fatalf("step %d: %s, want version %d", i, resp.Body, step.version)
		}
	}
	if len(q.msgs) != 3 {
		t.Fatalf("%d fetches enqueued, want 3 (x3, x5, x6)", len(q.msgs))
	}
	if h, err := jobs.Head(ctx, "github", cl, sha(5)); err != nil || h.Order != store.HeadPending || h.After != sha(3) {
		t.Fatalf("x5: %+v %v, want pending after x3", h, err)
	}
	if h, err := jobs.Head(ctx, "github", cl, sha(6)); err != nil || h.Order != store.HeadPending {
		t.Fatalf("x6 (after x5, pending): %+v %v, want pending", h, err)
	}
}

// A version placed pending may draw a number above a newer head's and
// have its job created first: the newer head's job is created all the
// same, below the changelist's head, never refused (its version was
// placed in the code host's order).
// Rules: R-SOURCE-6.
func TestIntake_PlacedVersionBelowTheHeadIsCreated_Offline(t *testing.T) {
	ctx := context.Background()
	jobs, q := memstore.NewJobs(nil), &memQueue{}
	in := orderIntake(jobs, q)
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	const cl = "Codertocat/Hello-World#2"
	// x7 then x5 drew versions 2 and 3 (neither event said what it
	// follows); x5's job was created first.
	for _, h := range []int{3, 7, 5} {
		if _, err := jobs.PlaceHead(ctx, store.HeadEvent{Source: "github", ChangelistID: cl, HeadSHA: sha(h)}); err != nil {
			t.Fatal(err)
		}
	}
	if resp := in.Handle(ctx, gh, ghPush(t, "d-x5", sha(5), sha(9))); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("x5: %d %s", resp.StatusCode, resp.Body)
	}
	resp := in.Handle(ctx, gh, ghPush(t, "d-x7", sha(7), sha(6)))
	var acc api.Accepted
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &acc) != nil || acc.ReviewVersion != 2 {
		t.Fatalf("x7 after x5's job: %d %s, want 202 version 2", resp.StatusCode, resp.Body)
	}
	if v, _, _ := jobs.LatestVersion(ctx, "github", cl); v != 3 {
		t.Fatalf("the changelist's head moved to %d, want 3 still", v)
	}
}

// Two pushes' webhooks handled at once by intake, many times over: the
// newer is never stale, and the older is stale or below it.
// Rules: R-SOURCE-6.
func TestIntake_TwoPushesAtOnce_TheNewerIsTheNewest_Offline(t *testing.T) {
	ctx := context.Background()
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	for round := range 50 {
		jobs, q := memstore.NewJobs(nil), &memQueue{}
		in := orderIntake(jobs, q)
		in.Handle(ctx, gh, ghPush(t, "d-x3", sha(3), sha(2)))
		var older, newer api.Accepted
		var oldStatus, newStatus int
		var wg sync.WaitGroup
		wg.Go(func() {
			r := in.Handle(ctx, gh, ghPush(t, "d-x5", sha(5), sha(4)))
			newStatus = r.StatusCode
			_ = json.Unmarshal([]byte(r.Body), &newer)
		})
		wg.Go(func() {
			r := in.Handle(ctx, gh, ghPush(t, "d-x4", sha(4), sha(3)))
			oldStatus = r.StatusCode
			_ = json.Unmarshal([]byte(r.Body), &older)
		})
		wg.Wait()
		if newStatus != http.StatusAccepted || (oldStatus == http.StatusAccepted && older.ReviewVersion >= newer.ReviewVersion) {
			t.Fatalf("round %d: x4 %d v%d, x5 %d v%d; want x5 accepted, the newest", round, oldStatus, older.ReviewVersion, newStatus, newer.ReviewVersion)
		}
	}
}

// Gerrit's versions are its patch set numbers: a patch set after a later
// one is answered 200 stale (as a code host's event, not the 409 a
// generic caller gets), and starts nothing.
// Rules: R-SOURCE-6, R-INTAKE-3.
func TestIntake_GerritLowerPatchSetIsStale_Offline(t *testing.T) {
	ctx := context.Background()
	jobs, q := memstore.NewJobs(nil), &memQueue{}
	in := orderIntake(jobs, q)
	gerrit := webhook.Gerrit{Token: []byte("gerrit-token")}
	b, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", "gerrit", "patchset-created.json"))
	if err != nil {
		t.Fatal(err)
	}
	patchSet := func(n int) webhook.Request {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["patchSet"].(map[string]any)["number"] = n
		m["patchSet"].(map[string]any)["revision"] = sha(n)
		body, _ := json.Marshal(m)
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set(webhook.GerritTokenHeader, "gerrit-token")
		return webhook.Request{Header: h.Get, Body: body}
	}
	if r := in.Handle(ctx, gerrit, patchSet(3)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("patch set 3: %d %s", r.StatusCode, r.Body)
	}
	r := in.Handle(ctx, gerrit, patchSet(2))
	var st api.StaleHead
	if r.StatusCode != http.StatusOK || json.Unmarshal([]byte(r.Body), &st) != nil || st.Status != "stale" || st.CurrentVersion != 3 {
		t.Fatalf("patch set 2 after 3: %d %s, want 200 stale behind 3", r.StatusCode, r.Body)
	}
	if len(q.msgs) != 1 {
		t.Fatalf("%d fetches enqueued, want 1", len(q.msgs))
	}
	if _, err := jobs.Get(ctx, job.NewID("gerrit", "TestRepo1~2", 2)); err == nil {
		t.Fatal("patch set 2 has a job")
	}
}
