// Package critictest holds what the critic's tests, the end-to-end tests
// and the eval harness share: a sample change, and a stand-in for an
// OpenAI-compatible chat completions server that records each request and
// answers with replies the test chooses.
package critictest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/criticizer/criticizer/internal/critic"
)

// SampleDiff is a three-file change: a Go source edit with an SQL
// injection and an ignored error, a new test file and a README edit.
const SampleDiff = `diff --git a/internal/store/store.go b/internal/store/store.go
index 3b18e51..b1c5e2a 100644
--- a/internal/store/store.go
+++ b/internal/store/store.go
@@ -10,7 +10,10 @@ import (
 func (s *Store) Get(ctx context.Context, id string) (*Item, error) {
-	row := s.db.QueryRowContext(ctx, "SELECT * FROM items WHERE id = ?", id)
+	row := s.db.QueryRowContext(ctx, "SELECT * FROM items WHERE id = '"+id+"'")
 	var it Item
-	if err := row.Scan(&it.ID, &it.Name); err != nil {
-		return nil, err
-	}
+	row.Scan(&it.ID, &it.Name)
+	// TODO: cache results
+	if it.ID == "" {
+		return nil, nil
+	}
+	return &it, nil
 }
diff --git a/internal/store/store_test.go b/internal/store/store_test.go
new file mode 100644
index 0000000..9f3a4b2
--- /dev/null
+++ b/internal/store/store_test.go
@@ -0,0 +1,5 @@
+package store
+
+import "testing"
+
+func TestGet(t *testing.T) {}
diff --git a/README.md b/README.md
index 8b13789..2d2a0c1 100644
--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # Store
+Ask ops@example.com for database access.
`

// SampleInput is SampleDiff as a review request.
func SampleInput() critic.Input {
	return critic.Input{
		ChangelistID:  "acme/store#42",
		ReviewVersion: 3,
		Title:         "Look items up by id",
		Author:        "octocat",
		URL:           "https://github.com/acme/store/pull/42",
		Description:   "Looks items up by id instead of scanning.",
		Diff:          SampleDiff,
	}
}

// SampleReview is a model's answer on SampleDiff: two real findings, on
// lines the numbered diff shows.
const SampleReview = `{"summary": "The lookup is open to SQL injection and hides scan errors.",
 "findings": [
  {"file": "internal/store/store.go", "line": 13, "severity": "warning", "rule": "ignored-error", "message": "The error returned by Scan is discarded, so a failed read returns an empty item; return it."},
  {"file": "internal/store/store.go", "line": 11, "severity": "error", "rule": "sql-injection", "message": "An id of ' OR '1'='1 returns every row; pass id as a query parameter."}
 ]}`

// Completion is a chat completion as OpenAI returns it, with content,
// finish_reason and usage.
func Completion(content, finishReason string, promptTokens, completionTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion", "created": 1741569952,
		"model": "gpt-4.1-2025-04-14",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finishReason,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": promptTokens, "completion_tokens": completionTokens,
			"total_tokens": promptTokens + completionTokens},
	})
	return b
}

// Tokens is what the stand-ins bill a request's prompt: about 4 bytes a
// token, as OpenAI's rule of thumb has it. It is an estimate, the same for
// every request, so ratios between requests are what it measures.
func Tokens(r Request) int { return (len(r.System) + len(r.User)) / 4 }

// Request is one recorded chat completion request.
type Request struct {
	Path, Authorization string
	Body                map[string]any
	System, User        string
}

// StandIn is an OpenAI-compatible server for tests: it records every
// request and answers with Reply (by default SampleReview, finished).
type StandIn struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Request
	// Reply answers a request; replace it before the first request.
	Reply func(r Request) (status int, body []byte)
}

// NewStandIn starts a stand-in; Close it when done.
func NewStandIn() *StandIn {
	s := &StandIn{Reply: func(Request) (int, []byte) { return 200, Completion(SampleReview, "stop", 1200, 180) }}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")}
		_ = json.Unmarshal(raw, &req.Body)
		if msgs, ok := req.Body["messages"].([]any); ok && len(msgs) == 2 {
			req.System, _ = msgs[0].(map[string]any)["content"].(string)
			req.User, _ = msgs[1].(map[string]any)["content"].(string)
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		reply := s.Reply
		s.mu.Unlock()
		status, body := reply(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	return s
}

// Requests are the requests so far.
func (s *StandIn) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}
