package fault_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/criticizer/criticizer/internal/fault"
)

// A Stall hangs the exchange until Until says so, even past the request's
// own deadline (a caller cannot answer at the instant its invocation is
// killed), and with When=After the service did the work first: the chaos
// campaign's timeout_kill.
func TestStall_HangsUntilReleased_IgnoringTheDeadline_AfterTheWork(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var released atomic.Bool
	in := fault.New(fault.Rule{Kind: fault.Stall, When: fault.After, Times: 1, Latency: 10 * time.Second,
		Until: func(context.Context) bool { return released.Load() }})
	cfg := aws.Config{HTTPClient: http.DefaultClient}
	in.Option()(&cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		released.Store(true)
	}()
	start := time.Now()
	resp, err := cfg.HTTPClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a stalled exchange answered")
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("the stall ended after %s: not at its release (300 ms), the deadline was 50 ms", d)
	}
	if served.Load() != 1 {
		t.Fatalf("the service saw %d requests, want 1 (When=After: it did the work)", served.Load())
	}
}
