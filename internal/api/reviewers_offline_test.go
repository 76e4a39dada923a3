package api_test

import (
	"context"
	"encoding/json"
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

// shaVersions assigns versions per head commit, as store.Jobs does.
type shaVersions struct {
	mu sync.Mutex
	by map[string]int
}

func (v *shaVersions) PlaceHead(_ context.Context, ev store.HeadEvent) (store.Placement, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := ev.ChangelistID + ev.HeadSHA
	if n, ok := v.by[k]; ok {
		return store.Placement{Version: n}, nil
	}
	v.by[k] = len(v.by) + 1
	return store.Placement{Version: v.by[k], PlacedAt: time.Now()}, nil
}

func ghHook(t *testing.T, event, file, delivery string, edit func(m map[string]any)) webhook.Request {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", "github", file))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ = json.Marshal(m)
	}
	h := http.Header{}
	h.Set(webhook.GitHubEventHeader, event)
	h.Set(webhook.GitHubDeliveryHeader, delivery)
	h.Set(webhook.GitHubSignatureHeader, webhook.Sign([]byte(offlineSecret), b))
	return webhook.Request{Header: h.Get, Body: b}
}

// Reviewer webhooks at intake, on the in-memory stores: a removal and a
// submitted review are recorded in the changelist's roster and start
// nothing; a reviewer requested on a pull request nobody reviewed yet
// starts its review; requested on a version that has a job, they ask the
// fetch stage for a reviewer refresh of that job, and create no job and
// no idempotency record (a redelivery asks again, harmlessly).
// Rules: R-REVIEWERS-1, R-REVIEWERS-2.
func TestIntake_ReviewerWebhooks_Offline(t *testing.T) {
	ctx := context.Background()
	q := &memQueue{}
	jobs, rosters := memstore.NewJobs(nil), memstore.NewRosters()
	in := &api.Intake{Jobs: jobs, Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: q, Rosters: rosters,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour,
		Versions: &shaVersions{by: map[string]int{}}, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789")}
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	const cl = "Codertocat/Hello-World#2"

	resp := in.Handle(ctx, gh, ghHook(t, "pull_request", "pull_request.review_request_removed.json", "d-removed", nil))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"status":"recorded"`) || len(q.msgs) != 0 {
		t.Fatalf("removal: %d %s, %d enqueued", resp.StatusCode, resp.Body, len(q.msgs))
	}
	resp = in.Handle(ctx, gh, ghHook(t, "pull_request_review", "pull_request_review.submitted.json", "d-review", nil))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"status":"recorded"`) || len(q.msgs) != 0 {
		t.Fatalf("review: %d %s", resp.StatusCode, resp.Body)
	}
	r, _ := rosters.Get(ctx, "github", cl)
	if r["octocat"].Removed.IsZero() || r["codertocat"].Reviewed.IsZero() {
		t.Fatalf("roster %+v: the removal or the review was not recorded", r)
	}

	// Requested before anyone reviewed the pull request: its review starts.
	resp = in.Handle(ctx, gh, ghHook(t, "pull_request", "pull_request.review_requested.json", "d-req-1", nil))
	var acc api.Accepted
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &acc) != nil || acc.Status != "accepted" || acc.ReviewVersion != 1 {
		t.Fatalf("first request: %d %s, want a new review of version 1", resp.StatusCode, resp.Body)
	}
	if len(q.msgs) != 1 || q.msgs[0].Task != "" || q.msgs[0].Stage != job.StageFetch {
		t.Fatalf("enqueued %+v, want the fetch stage of the new job", q.msgs)
	}

	// Requested again (another reviewer) with the job there: a refresh
	// task for it, no new job, and a redelivery asks again.
	for i, delivery := range []string{"d-req-2", "d-req-2"} {
		resp = in.Handle(ctx, gh, ghHook(t, "pull_request", "pull_request.review_requested.json", delivery, func(m map[string]any) {
			m["requested_reviewer"].(map[string]any)["login"] = "hubot"
		}))
		var upd api.ReviewersUpdated
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &upd) != nil || upd.Status != "reviewers_updated" || upd.JobID != acc.JobID {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, resp.Body)
		}
		last := q.msgs[len(q.msgs)-1]
		if len(q.msgs) != 2+i || last.Task != job.TaskReviewers || last.JobID != acc.JobID || last.Stage != job.StageFetch {
			t.Fatalf("request %d: enqueued %+v, want a reviewer refresh of %s", i, q.msgs, acc.JobID)
		}
	}
	if _, _, err := jobs.LatestVersion(ctx, "github", cl); err != nil {
		t.Fatal(err)
	}
}
