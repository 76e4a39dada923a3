package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/wire"
)

// malformedDiff is a diff whose hunk ends early: the llm stage fails it
// SCHEMA_INVALID, non-retryable, on its first attempt.
const malformedDiff = "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,2 +1,3 @@\n package a\n+const x = 1\n"

// R-STAGE-4: a job recorded dead_lettered has its envelope in the DLQ,
// whatever dies between the two. The llm invocation of a job with a
// malformed diff crashes at its dead-letter send, before SQS sees it (the
// chaos campaign's crash, injected at the HTTP client below the SDK):
// while its message waits out the visibility timeout, GET /jobs must not
// show the job dead_lettered with nothing in the llm DLQ; once the
// message comes back the envelope is written and the job marked.
func TestDeadLetter_CrashAtTheSend_NeverDeadLetteredWithoutEnvelope(t *testing.T) {
	t.Parallel()
	cl := testenv.Prefix(t)
	id := job.NewID("generic", cl, 1)
	var crashed atomic.Bool
	envelopeOf := func(in any) bool {
		m, ok := in.(*sqs.SendMessageInput)
		return ok && strings.Contains(aws.ToString(m.MessageBody), `"schema_version"`) &&
			strings.Contains(aws.ToString(m.MessageBody), string(id)) && crashed.CompareAndSwap(false, true)
	}
	inj := fault.New(fault.Rule{Service: "SQS", Operation: "SendMessage", Match: envelopeOf, Kind: fault.Crash, Times: 1})
	s := startStack(t, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}})
	// The crashed batch comes back in 3 s, not the local stack's 30.
	if _, err := s.env.Clients.SQS.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(s.res.Queues.Queue[job.StageLLM]), Attributes: map[string]string{"VisibilityTimeout": "3"}}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(sample(t, cl, 1, "poison@example.com"), &m)
	m["diff"] = malformedDiff
	body, _ := json.Marshal(m)
	if got := accept(t, s, "k-"+cl, body); got != id {
		t.Fatalf("job %s, want %s", got, id)
	}

	// Watch the job until its envelope is in the DLQ and it is marked.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v api.JobView
		s.getJSON(s.jobLink(id), &v)
		envelopes := envelopesFor(t, s, job.StageLLM, id)
		if v.Status == job.StatusDeadLettered {
			if len(envelopes) == 0 {
				t.Fatalf("job %s is dead_lettered (%+v) with no envelope in the llm DLQ (crashed at the send: %v)", id, v.DeadLetter, crashed.Load())
			}
			if v.DeadLetter == nil || v.DeadLetter.EnvelopeID != envelopes[0].ID || v.DeadLetter.ErrorClass != "SCHEMA_INVALID" {
				t.Fatalf("the job's dead letter %+v does not name envelope %s", v.DeadLetter, envelopes[0].ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 60 s (crashed at the send: %v, envelopes %d)", id, v.Status, crashed.Load(), len(envelopes))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !crashed.Load() {
		t.Fatal("the dead-letter send never crashed: the test tested nothing")
	}
}

// envelopesFor reads, without hiding them, the envelopes naming a job in
// a stage's DLQ: it receives them, then makes them visible again at once.
// A ReceiveMessage with VisibilityTimeout 0 does not do that: the SDK
// leaves a zero int32 out of the request, so the queue's default hides
// each message received (30 s), and the next read found the DLQ empty
// beside a job marked dead_lettered. ChangeMessageVisibilityBatch always
// sends its entries' timeout, 0 included.
func envelopesFor(t *testing.T, s *stack, st job.Stage, id job.ID) []deadletter.Envelope {
	t.Helper()
	url := aws.String(s.res.Queues.DLQ[st])
	out, err := s.env.Clients.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	var envs []deadletter.Envelope
	var release []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range out.Messages {
		release = append(release, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		if env, ok, err := deadletter.Decode([]byte(aws.ToString(m.Body))); err == nil && ok && env.JobID == string(id) {
			envs = append(envs, env)
		}
	}
	if len(release) > 0 {
		if _, err := s.env.Clients.SQS.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: url, Entries: release}); err != nil {
			t.Fatal(err)
		}
	}
	return envs
}
