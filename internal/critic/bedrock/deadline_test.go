package bedrock

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/retry"
)

// seenDeadline is the real client, recording the deadline of each call's
// context.
type seenDeadline struct {
	*bedrockruntime.Client
	mu   sync.Mutex
	seen []time.Time
}

func (s *seenDeadline) Converse(ctx context.Context, in *bedrockruntime.ConverseInput, opts ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error) {
	d, _ := ctx.Deadline()
	s.mu.Lock()
	s.seen = append(s.seen, d)
	s.mu.Unlock()
	return s.Client.Converse(ctx, in, opts...)
}

// slowBedrock is a bedrock-runtime that has not answered yet when the
// caller gives up: it holds each request until the client goes away.
func slowBedrock(t *testing.T) *seenDeadline {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client that went away only once the body
		// has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	o := bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:  awshttp.NewBuildableClient().WithTimeout(30 * time.Second)}
	ClientOptions(&o)
	return &seenDeadline{Client: bedrockruntime.New(o)}
}

// A slow model is cut by a timeout derived from the invocation: the call
// ends AfterReply before the caller's deadline (a quarter of what is left
// in a short one), or at the model's own limit if that comes first; the
// cut is a retryable NETWORK_TIMEOUT, which the stage runner retries
// within its budget.
// Rules: R-STAGE-9.
func TestBedrock_SlowModelCutByADerivedTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    time.Duration
		deadline time.Duration // the invocation's, from now
		// keep: how much of the invocation the call must leave at least.
		keep time.Duration
	}{
		{"the invocation's deadline", time.Hour, 800 * time.Millisecond, 150 * time.Millisecond},
		{"the model's own limit", 300 * time.Millisecond, time.Hour, AfterReply},
	} {
		client := slowBedrock(t)
		m, err := New(client, brModel, WithTimeout(tc.limit))
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
		if len(client.seen) != 1 || client.seen[0].IsZero() {
			t.Fatalf("%s: calls saw deadlines %v", tc.name, client.seen)
		}
		if left := invocation.Sub(client.seen[0]); left < tc.keep {
			t.Errorf("%s: the call could run to %v before the invocation's deadline, want at least %v kept", tc.name, left, tc.keep)
		}
	}
}

// The client makes one attempt and has no HTTP timeout of its own: the
// shared 30 s bound of every AWS client would cut each slow model call.
// Rules: R-STAGE-9.
func TestClientOptions_OneAttemptNoConstantTimeout(t *testing.T) {
	o := bedrockruntime.Options{HTTPClient: awshttp.NewBuildableClient().WithTimeout(30 * time.Second), RetryMaxAttempts: 3}
	ClientOptions(&o)
	bc, ok := o.HTTPClient.(*awshttp.BuildableClient)
	if o.RetryMaxAttempts != 1 || !ok || bc.GetTimeout() != 0 {
		t.Fatalf("attempts %d, client %T timeout %v", o.RetryMaxAttempts, o.HTTPClient, bc.GetTimeout())
	}
}
