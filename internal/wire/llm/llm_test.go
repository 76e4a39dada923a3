package llm_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/wire/llm"
)

type oneDiff struct{}

func (oneDiff) Put(context.Context, string, []byte) (string, string, error) { return "", "", nil }
func (oneDiff) Get(context.Context, string, int64) ([]byte, error) {
	return []byte(critictest.SampleDiff), nil
}

type nopEnqueue struct{}

func (nopEnqueue) Enqueue(context.Context, job.Message) error { return nil }

// queue and recorder stand in for SQS and the jobs table's failure
// record (store.Jobs.RecordFailure).
type queue struct {
	mu          sync.Mutex
	delays, dlq int
}

func (q *queue) Delay(context.Context, string, string, time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delays++
	return nil
}
func (q *queue) DeadLetter(context.Context, job.Stage, []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dlq++
	return nil
}
func (q *queue) Requeue(context.Context, string, string, time.Duration) error { return nil }

type recorder struct {
	mu     sync.Mutex
	failed []job.Failure
	status []job.Status
}

func (r *recorder) RecordFailure(_ context.Context, _ job.ID, f job.Failure, s job.Status) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed, r.status = append(r.failed, f), append(r.status, s)
	return time.Time{}, nil
}

// A slow model (the OpenAI-compatible critic, as CRITICIZER_CRITIC=openai
// wires it) is cut by a timeout derived from the invocation: by
// CRITICIZER_MODEL_TIMEOUT when that comes first, else by the
// invocation's remaining time. Either way the cut is a retryable
// NETWORK_TIMEOUT that the runner records on the job and backs off, with
// the message kept for its next attempt: not a killed invocation, not a
// dead letter.
// Rules: R-STAGE-9.
func TestLLM_SlowModelCutByTheDerivedTimeout_RetryableOnTheJob(t *testing.T) {
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	model.Reply = func(critictest.Request) (int, []byte) {
		time.Sleep(2 * time.Second) // longer than either cut below
		return 200, critictest.Completion(critictest.SampleReview, "stop", 10, 10)
	}
	for _, tc := range []struct {
		name              string
		modelTimeout, inv time.Duration
	}{
		{"CRITICIZER_MODEL_TIMEOUT", 300 * time.Millisecond, time.Hour},
		{"the invocation's remaining time", time.Hour, 1500 * time.Millisecond},
	} {
		cfg := config.Config{LLM: config.LLM{Critic: config.CriticOpenAI, ModelTimeout: tc.modelTimeout,
			OpenAI: config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1"}}}
		c, err := llm.Critic(cfg, aws.Config{})
		if err != nil {
			t.Fatal(err)
		}
		jobs := memstore.NewJobs(func() time.Time { return time.Now().UTC() })
		j := storetest.NewJob("slow-"+tc.name, 1)
		j.Stage, j.Status, j.DiffRef = job.StageLLM, job.StatusInProgress, "diffs/x"
		jobs.Put(j)
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		review := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: oneDiff{}, Queue: nopEnqueue{}, Log: log, Now: time.Now}, Critic: c}
		q, rec := &queue{}, &recorder{}
		r := stage.New(job.StageLLM, "https://sqs.local/llm", review.Handle, q, rec, log,
			stage.WithRand(retry.NewRand(1)), stage.WithMessageTime(llm.MessageTime(cfg)), stage.WithReserve(200*time.Millisecond), stage.WithMaxReceives(10))
		b, _ := json.Marshal(job.Message{JobID: j.ID, Stage: job.StageLLM})
		ctx, cancel := context.WithTimeout(context.Background(), tc.inv)
		resp, err := r.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", ReceiptHandle: "rh", Body: string(b),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 1 || q.delays != 1 || q.dlq != 0 {
			t.Fatalf("%s: failures %v, backoffs %d, dead letters %d; want the message kept, backing off", tc.name, resp.BatchItemFailures, q.delays, q.dlq)
		}
		if len(rec.failed) != 1 || rec.failed[0].ErrorClass != string(retry.NetworkTimeout) || rec.status[0] != job.StatusRetryableFailed ||
			rec.failed[0].Stage != job.StageLLM || rec.failed[0].Attempt != 1 {
			t.Fatalf("%s: recorded %+v %v; want one retryable NETWORK_TIMEOUT of llm attempt 1", tc.name, rec.failed, rec.status)
		}
		if got, _ := jobs.Get(context.Background(), j.ID); got.Stage != job.StageLLM || len(got.Critique) != 0 {
			t.Fatalf("%s: the job moved on: %+v", tc.name, got)
		}
	}
	if len(model.Requests()) != 2 {
		t.Fatalf("%d model requests, want one per case", len(model.Requests()))
	}
}

// The llm stage's need is the model's worst case and the work around it;
// the offline critic needs the runner's default.
// Rules: R-STAGE-9.
func TestMessageTime_FollowsTheModelTimeout(t *testing.T) {
	if got := llm.MessageTime(config.Config{LLM: config.LLM{Critic: config.CriticBedrock, ModelTimeout: 5 * time.Minute}}); got != 5*time.Minute+llm.Overhead {
		t.Errorf("bedrock: %v", got)
	}
	if got := llm.MessageTime(config.Config{LLM: config.LLM{Critic: config.CriticOffline, ModelTimeout: time.Hour}}); got != stage.DefaultMessageTime {
		t.Errorf("offline: %v", got)
	}
}
