package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

// delayQueue records messages and their delays, as SQS would hold them.
type delayQueue struct {
	mu     sync.Mutex
	msgs   []job.Message
	delays []time.Duration
	fail   bool
}

func (q *delayQueue) Enqueue(ctx context.Context, m job.Message) error {
	return q.EnqueueAfter(ctx, m, 0)
}

func (q *delayQueue) EnqueueAfter(_ context.Context, m job.Message, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return errors.New("queue down")
	}
	q.msgs, q.delays = append(q.msgs, m), append(q.delays, d)
	return nil
}

func (q *delayQueue) refreshes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, m := range q.msgs {
		if m.Task == job.TaskReviewers {
			n++
		}
	}
	return n
}

// 200 replays of one signed reviewer webhook, concurrent, give one
// reviewer refresh (one task, so one round of source API calls); the
// others are answered "duplicate". Other reviewer events of the same
// version inside the refresh window are gathered into that task, which is
// delayed to the window's end; the first after it schedules another. A
// delivery whose handling failed (503) is handled when the source retries
// it, and a delivery id past the replay window is new again.
// Rules: R-BUDGET-3.
func TestIntake_ReviewerEventReplays_OneRefresh(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	q := &delayQueue{}
	in := &api.Intake{Jobs: memstore.NewJobs(clock), Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: q, Rosters: memstore.NewRosters(),
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock, TTL: time.Hour,
		Versions: &shaVersions{by: map[string]int{}}, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789"),
		ReviewerReplays: &api.ReviewerReplays{Store: memstore.NewReplays(clock), Window: 24 * time.Hour, RefreshWindow: 10 * time.Second}}
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	requested := func(delivery, who string) webhook.Request {
		return ghHook(t, "pull_request", "pull_request.review_requested.json", delivery, func(m map[string]any) {
			m["requested_reviewer"].(map[string]any)["login"] = who
		})
	}
	// The first request starts the version's review.
	if resp := in.Handle(ctx, gh, requested("d-first", "octocat")); resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"accepted"`) {
		t.Fatalf("first request: %d %s", resp.StatusCode, resp.Body)
	}

	hubot := requested("d-hubot", "hubot")
	var wg sync.WaitGroup
	var dups, updated sync.Map
	for i := range 200 {
		wg.Go(func() {
			resp := in.Handle(ctx, gh, hubot)
			switch {
			case resp.StatusCode == http.StatusAccepted && strings.Contains(resp.Body, `"status":"duplicate"`):
				dups.Store(i, true)
			case resp.StatusCode == http.StatusAccepted && strings.Contains(resp.Body, `"reviewers_updated"`):
				updated.Store(i, true)
			default:
				t.Errorf("replay %d: %d %s", i, resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	count := func(m *sync.Map) int { n := 0; m.Range(func(any, any) bool { n++; return true }); return n }
	if q.refreshes() != 1 || count(&updated) != 1 || count(&dups) != 199 {
		t.Fatalf("200 replays: %d refresh tasks, %d handled, %d duplicates; want 1, 1, 199", q.refreshes(), count(&updated), count(&dups))
	}
	if d := q.delays[len(q.delays)-1]; d != 10*time.Second {
		t.Fatalf("the refresh is delayed %s, want the 10s window", d)
	}

	// Other reviewers requested inside the window: handled, gathered.
	for _, who := range []string{"a1", "a2", "a3", "a4", "a5"} {
		resp := in.Handle(ctx, gh, requested("d-"+who, who))
		var upd api.ReviewersUpdated
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &upd) != nil || upd.Status != "reviewers_updated" {
			t.Fatalf("%s: %d %s", who, resp.StatusCode, resp.Body)
		}
	}
	if q.refreshes() != 1 {
		t.Fatalf("%d refresh tasks for six events inside one window, want 1", q.refreshes())
	}
	advance(11 * time.Second)
	q.fail = true
	if resp := in.Handle(ctx, gh, requested("d-late", "late")); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with the queue down: %d %s, want 503", resp.StatusCode, resp.Body)
	}
	q.fail = false
	if resp := in.Handle(ctx, gh, requested("d-late", "late")); resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"reviewers_updated"`) || q.refreshes() != 2 {
		t.Fatalf("the retry of a failed delivery: %d %s, %d refreshes; want handled, a second refresh", resp.StatusCode, resp.Body, q.refreshes())
	}
	advance(25 * time.Hour)
	if resp := in.Handle(ctx, gh, hubot); !strings.Contains(resp.Body, `"reviewers_updated"`) || q.refreshes() != 3 {
		t.Fatalf("past the replay window: %d %s, %d refreshes", resp.StatusCode, resp.Body, q.refreshes())
	}
}

// A signed reviewer webhook captured and replayed under fresh delivery
// ids (X-GitHub-Delivery is not covered by GitHub's signature): 50 posts
// of one body give one reviewer refresh, though they come after the
// refresh window that would gather them; every other is a duplicate. A
// body whose handling failed (503) is handled when it comes again. The
// same for GitLab with a secret token, whose key headers the token does
// not cover either.
// Rules: R-BUDGET-3.
func TestIntake_ReviewerEventUnderFreshDeliveryIDs_OneRefresh(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	q := &delayQueue{}
	in := &api.Intake{Jobs: memstore.NewJobs(clock), Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: q, Rosters: memstore.NewRosters(),
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock, TTL: time.Hour,
		Versions: &shaVersions{by: map[string]int{}}, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789"),
		ReviewerReplays: &api.ReviewerReplays{Store: memstore.NewReplays(clock), Window: 24 * time.Hour, RefreshWindow: 10 * time.Second}}
	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	requested := func(delivery, who string) webhook.Request {
		return ghHook(t, "pull_request", "pull_request.review_requested.json", delivery, func(m map[string]any) {
			m["requested_reviewer"].(map[string]any)["login"] = who
		})
	}
	if resp := in.Handle(ctx, gh, requested("d-first", "octocat")); !strings.Contains(resp.Body, `"accepted"`) {
		t.Fatalf("first request: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := in.Handle(ctx, gh, requested("fresh-0", "hubot")); !strings.Contains(resp.Body, `"reviewers_updated"`) || q.refreshes() != 1 {
		t.Fatalf("hubot requested: %d %s, %d refreshes", resp.StatusCode, resp.Body, q.refreshes())
	}
	// Past the refresh window: a replay taken for a new event would
	// schedule another refresh.
	advance(11 * time.Second)
	var wg sync.WaitGroup
	var dups atomic.Int32
	for i := 1; i < 50; i++ {
		wg.Go(func() {
			resp := in.Handle(ctx, gh, requested(fmt.Sprintf("fresh-%d", i), "hubot"))
			if resp.StatusCode == http.StatusAccepted && strings.Contains(resp.Body, `"status":"duplicate"`) {
				dups.Add(1)
			} else {
				t.Errorf("replay under fresh-%d: %d %s", i, resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	if q.refreshes() != 1 || dups.Load() != 49 {
		t.Fatalf("one body under 50 delivery ids: %d refreshes, %d duplicates; want 1 and 49", q.refreshes(), dups.Load())
	}

	q.fail = true
	if resp := in.Handle(ctx, gh, requested("late-1", "late")); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with the queue down: %d %s, want 503", resp.StatusCode, resp.Body)
	}
	q.fail = false
	if resp := in.Handle(ctx, gh, requested("late-2", "late")); !strings.Contains(resp.Body, `"reviewers_updated"`) || q.refreshes() != 2 {
		t.Fatalf("a failed body again: %d %s, %d refreshes; want handled, a second refresh", resp.StatusCode, resp.Body, q.refreshes())
	}

	gl := webhook.GitLab{Token: []byte("gitlab-token")}
	glHook := func(file, key string) webhook.Request {
		b, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", "gitlab", file))
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set(webhook.GitLabEventHeader, "Merge Request Hook")
		h.Set(webhook.GitLabTokenHeader, "gitlab-token")
		h.Set("Idempotency-Key", key)
		return webhook.Request{Header: h.Get, Body: b}
	}
	if resp := in.Handle(ctx, gl, glHook("merge_request.open.json", "gl-open")); !strings.Contains(resp.Body, `"accepted"`) {
		t.Fatalf("gitlab open: %d %s", resp.StatusCode, resp.Body)
	}
	before := q.refreshes()
	for i := range 50 {
		resp := in.Handle(ctx, gl, glHook("merge_request.update-reviewers.json", fmt.Sprintf("gl-%d", i)))
		want := `"status":"duplicate"`
		if i == 0 {
			want = `"reviewers_updated"`
		}
		if resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, want) {
			t.Fatalf("gitlab reviewers update under gl-%d: %d %s, want %s", i, resp.StatusCode, resp.Body, want)
		}
		advance(11 * time.Second)
	}
	if n := q.refreshes() - before; n != 1 {
		t.Fatalf("gitlab: one body under 50 keys gave %d refreshes, want 1", n)
	}
}
