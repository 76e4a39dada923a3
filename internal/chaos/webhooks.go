package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/webhook"
)

// spec is one generated review: a changelist, its recipients, and how its
// webhook is delivered.
type spec struct {
	Changelist string
	Recipients []string
	Key        string
	Body       []byte
	// Duplicate: the webhook is delivered twice. SameKey: the second is an
	// identical redelivery (same Idempotency-Key); otherwise a second
	// delivery of the same event under another key. Concurrent: both
	// deliveries race.
	Duplicate, SameKey, Concurrent bool
	// Poison: the diff is malformed, so the llm stage fails permanently
	// (SCHEMA_INVALID) and the job must end dead-lettered with a complete
	// envelope.
	Poison bool
	ID     job.ID
}

// diffTemplate is the reviewed change; it carries a planted credential,
// which must never reach a log line or a dead letter.
const diffTemplate = `diff --git a/internal/pay/client.go b/internal/pay/client.go
index 3b18e51..a9c4f02 100644
--- a/internal/pay/client.go
+++ b/internal/pay/client.go
@@ -3,4 +3,8 @@ package pay
 // Client calls the payment API.
 type Client struct {
 	base string
+	// TODO: move to the secrets store
+	token string // %s
 }
+
+func (c *Client) Charge(n int) { fmt.Println("charge", n, %d) }
`

// poisonTemplate is a diff whose hunk ends early; its lines carry the
// planted credential too.
const poisonTemplate = `diff --git a/internal/pay/key.go b/internal/pay/key.go
--- a/internal/pay/key.go
+++ b/internal/pay/key.go
@@ -1,2 +1,3 @@
 package pay
+const key = "%s" // %d
`

// generate builds n specs from rng: 1–5 recipients each out of a shared
// pool (a reviewer is on many changelists), dupRate of them delivered
// twice, poisonRate of them with a malformed diff.
func generate(rng *rand.Rand, run string, n int, dupRate, poisonRate float64, plantedToken string) []spec {
	pool := make([]string, max(10, n/2))
	for i := range pool {
		pool[i] = fmt.Sprintf("reviewer%03d.%s@example.com", i, run)
		if i%5 == 0 {
			// One reader in five is on daily delivery (digest.go).
			pool[i] = fmt.Sprintf("%s%03d.%s@example.com", dailyPrefix, i, run)
		}
	}
	specs := make([]spec, n)
	for i := range specs {
		cl := fmt.Sprintf("%s-cl%04d", run, i)
		k := 1 + rng.IntN(5)
		perm := rng.Perm(len(pool))[:k]
		rcpts := make([]string, k)
		for j, p := range perm {
			rcpts[j] = pool[p]
		}
		poison := rng.Float64() < poisonRate
		diff := fmt.Sprintf(diffTemplate, plantedToken, i)
		if poison {
			diff = fmt.Sprintf(poisonTemplate, plantedToken, i)
		}
		body, _ := json.Marshal(map[string]any{
			"changelist_id": cl, "review_version": 1,
			"title":  fmt.Sprintf("Chaos change %d", i),
			"url":    fmt.Sprintf("https://review.example.com/c/%s?access_token=%s", cl, plantedToken),
			"author": "chaos", "recipients": rcpts,
			"diff": diff,
		})
		s := spec{Changelist: cl, Recipients: rcpts, Key: "chaos-" + cl, Body: body, ID: job.NewID("generic", cl, 1), Poison: poison}
		if rng.Float64() < dupRate {
			s.Duplicate = true
			s.SameKey = rng.IntN(5) != 0
			s.Concurrent = rng.IntN(2) == 0
		}
		specs[i] = s
	}
	return specs
}

// intakeStats counts what the webhook sender saw.
type intakeStats struct {
	Posts, Retries, Answers5xx, Crashed502, TransportErrors atomic.Int64
	Accepted202, Replayed, Existing200                      atomic.Int64
	GaveUp, Unexpected                                      atomic.Int64
}

// sender posts webhooks like a code review system: on a 5xx or a broken
// connection it retries the same delivery (same key, same bytes) with
// backoff, as GitHub's redelivery would.
type sender struct {
	url    string
	secret []byte
	client *http.Client
	stats  *intakeStats
	// MaxAttempts bounds the retries of one delivery.
	maxAttempts int
}

// deliver posts one delivery until it is answered below 500, and returns
// the job id of the answer (accepted, replayed or existing).
func (s *sender) deliver(ctx context.Context, key string, body []byte) (job.ID, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			s.stats.Retries.Add(1)
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
		s.stats.Posts.Add(1)
		status, hdr, b, err := s.post(ctx, key, body)
		switch {
		case err != nil:
			s.stats.TransportErrors.Add(1)
		case status == http.StatusBadGateway:
			s.stats.Crashed502.Add(1)
		case status >= 500:
			s.stats.Answers5xx.Add(1)
		case status == http.StatusAccepted || status == http.StatusOK:
			var acc api.Accepted
			if err := json.Unmarshal(b, &acc); err != nil || acc.JobID == "" {
				// 200 for an existing job carries the job view.
				var v struct {
					JobID job.ID `json:"job_id"`
				}
				if json.Unmarshal(b, &v) != nil || v.JobID == "" {
					s.stats.Unexpected.Add(1)
					return "", fmt.Errorf("answer %d without a job id: %.200s", status, b)
				}
				acc.JobID = v.JobID
			}
			switch {
			case status == http.StatusOK:
				s.stats.Existing200.Add(1)
			case hdr.Get("Idempotent-Replayed") == "true":
				s.stats.Replayed.Add(1)
			default:
				s.stats.Accepted202.Add(1)
			}
			return acc.JobID, nil
		default:
			s.stats.Unexpected.Add(1)
			return "", fmt.Errorf("answer %d: %.200s", status, b)
		}
		if attempt >= s.maxAttempts {
			s.stats.GaveUp.Add(1)
			return "", fmt.Errorf("no answer below 500 after %d attempts", attempt)
		}
	}
}

func (s *sender) post(ctx context.Context, key string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/webhooks/generic", bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(s.secret, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// postAll delivers every spec with the given concurrency (and the
// duplicates), and returns the job id each delivery was answered with.
func (s *sender) postAll(ctx context.Context, specs []spec, concurrency int, rng *rand.Rand) (accepted map[job.ID]bool, errs []error) {
	accepted = map[job.ID]bool{}
	var mu sync.Mutex
	record := func(sp spec, id job.ID, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sp.Changelist, err))
			return
		}
		if id != sp.ID {
			errs = append(errs, fmt.Errorf("%s: answered with job %s, want %s", sp.Changelist, id, sp.ID))
			return
		}
		accepted[id] = true
	}
	// Late duplicates are delivered after a delay chosen now, from the seed.
	delays := make([]time.Duration, len(specs))
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(3000)) * time.Millisecond
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var late sync.WaitGroup
	for range max(1, concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				sp := specs[i]
				dupKey := sp.Key
				if !sp.SameKey {
					dupKey = sp.Key + "-redelivery"
				}
				if sp.Duplicate && sp.Concurrent {
					var pair sync.WaitGroup
					pair.Add(1)
					go func() {
						defer pair.Done()
						id, err := s.deliver(ctx, dupKey, sp.Body)
						record(sp, id, err)
					}()
					id, err := s.deliver(ctx, sp.Key, sp.Body)
					record(sp, id, err)
					pair.Wait()
					continue
				}
				id, err := s.deliver(ctx, sp.Key, sp.Body)
				record(sp, id, err)
				if sp.Duplicate {
					late.Add(1)
					go func() {
						defer late.Done()
						select {
						case <-ctx.Done():
							return
						case <-time.After(delays[i]):
						}
						id, err := s.deliver(ctx, dupKey, sp.Body)
						record(sp, id, err)
					}()
				}
			}
		}()
	}
	for i := range specs {
		work <- i
	}
	close(work)
	wg.Wait()
	late.Wait()
	return accepted, errs
}
