package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/retry"
)

// deadlineTransport records the deadline of each request's context.
type deadlineTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []time.Time
}

func (d *deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, _ := r.Context().Deadline()
	d.mu.Lock()
	d.seen = append(d.seen, dl)
	d.mu.Unlock()
	return d.next.RoundTrip(r)
}

// A slow model is cut by a timeout derived from the invocation: the call
// ends AfterReply before the caller's deadline (a quarter of what is left
// in a short one), or at Timeout if that comes first; no constant client
// timeout applies. The cut is a retryable NETWORK_TIMEOUT.
// Rules: R-STAGE-9.
func TestOpenAI_SlowModelCutByADerivedTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a client gone only then
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name     string
		limit    time.Duration
		deadline time.Duration
		keep     time.Duration
	}{
		{"the invocation's deadline", time.Hour, 800 * time.Millisecond, 150 * time.Millisecond},
		{"the model's own limit", 300 * time.Millisecond, time.Hour, AfterReply},
	} {
		tr := &deadlineTransport{next: srv.Client().Transport}
		m, err := New(Config{BaseURL: srv.URL, Model: "gpt-4.1", HTTPClient: &http.Client{Transport: tr}, Timeout: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		llm, err := critic.NewLLM(m)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
		invocation, _ := ctx.Deadline()
		_, err = llm.Review(ctx, critictest.SampleInput())
		cancel()
		c := retry.Classify(err)
		if err == nil || c.Class != retry.NetworkTimeout || !c.Retryable() {
			t.Fatalf("%s: %v classified %+v, want a retryable NETWORK_TIMEOUT", tc.name, err, c)
		}
		if len(tr.seen) != 1 || tr.seen[0].IsZero() {
			t.Fatalf("%s: requests saw deadlines %v", tc.name, tr.seen)
		}
		if left := invocation.Sub(tr.seen[0]); left < tc.keep {
			t.Errorf("%s: the call could run to %v before the invocation's deadline, want at least %v kept", tc.name, left, tc.keep)
		}
	}
	if m, _ := New(Config{Model: "gpt-4.1"}); m.client.Timeout != 0 || m.timeout != DefaultTimeout {
		t.Errorf("default client timeout %v, call limit %v: want none and %v", m.client.Timeout, m.timeout, DefaultTimeout)
	}
}
