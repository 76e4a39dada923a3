package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The queues' redrive limit in this test: below the stage's budget of 5,
// so a slow review runs out of receives before it runs out of attempts,
// and the runner must write the envelope itself on the last receive.
const deadlineMaxReceives = 3

// An llm invocation killed at its deadline with a batch of slow model
// calls: three reviews whose model never answers in time, three that
// answer at once, all at the llm stage together. The first llm
// invocation holding a slow review is killed at its deadline after its
// work and before its answer (Lambda returns nothing then: every message
// of the batch comes back, its receive counted, including those it
// finished or re-sent). Every other invocation runs as the runner plans
// it: model calls cut by a timeout derived from the invocation, messages
// there is no time for handed back uncharged.
//
// No message is lost and none is sent twice: each fast review's
// recipient gets exactly one email; each slow review runs out of its 3
// receives (or, when it was handed back uncharged along the way, of its
// 5 attempts) and is in the llm DLQ with the full envelope the runner
// wrote (NETWORK_TIMEOUT, exhausted, the original message), no raw item
// beside it; the job reads dead_lettered; the llm queue ends empty.
//
// With a poller that kills invocations at their deadline (as Lambda
// does) an overrun by the runner becomes one more kill, whose messages
// would reach the DLQ raw and fail this test; with a poller that waits,
// overruns are counted and logged.
// Rules: R-STAGE-9, R-STAGE-10, R-STAGE-4.
func TestLLM_KilledAtItsDeadline_SlowModelBatch_NothingLostNoneTwice(t *testing.T) {
	t.Parallel()
	base := testenv.Prefix(t)
	slowIDs, fastIDs := map[job.ID]string{}, map[job.ID]string{}
	for i := range 3 {
		slow, fast := fmt.Sprintf("%s-slow-%d", base, i), fmt.Sprintf("%s-fast-%d", base, i)
		slowIDs[job.NewID("generic", slow, 1)], fastIDs[job.NewID("generic", fast, 1)] = slow, fast
	}

	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	model.Reply = func(r critictest.Request) (int, []byte) {
		if strings.Contains(r.User, "-slow-") {
			// Longer than any model call the llm stage allows here.
			time.Sleep(3 * time.Second)
		}
		return 200, critictest.Completion(critictest.SampleReview, "stop", 1200, 180)
	}

	var killed atomic.Bool
	var overruns, invocations atomic.Int32
	var batchMu sync.Mutex
	largest := 0
	crash := func(st job.Stage, h devstack.SQSHandler) devstack.SQSHandler {
		if st != job.StageLLM {
			return h
		}
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			invocations.Add(1)
			batchMu.Lock()
			largest = max(largest, len(ev.Records))
			batchMu.Unlock()
			resp, err := h(ctx, ev)
			if d, ok := ctx.Deadline(); ok && time.Now().After(d) {
				overruns.Add(1)
			}
			if holdsOne(ev, slowIDs) && killed.CompareAndSwap(false, true) {
				// Killed at the deadline: the work is done, no answer goes
				// back, nothing of the batch is deleted.
				<-ctx.Done()
				runtime.Goexit()
			}
			return resp, err
		}
	}
	s := startStack(t, devstack.FunctionOptions{Timeout: 4 * time.Second, Crash: crash}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
		c.LLM.ModelTimeout = time.Second
		c.MaxReceiveCount = deadlineMaxReceives
	})
	// The local stack provisions maxReceiveCount 10: lower it on the stage
	// queues to what the runners were told, and let a killed batch come
	// back in 2 s.
	for _, st := range job.Stages() {
		sq := s.env.Clients.SQS
		dlq, err := sq.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.res.Queues.DLQ[st]),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlq.Attributes["QueueArn"], "maxReceiveCount": strconv.Itoa(deadlineMaxReceives)})
		attrs := map[string]string{"RedrivePolicy": string(redrive)}
		if st == job.StageLLM {
			attrs["VisibilityTimeout"] = "2"
		}
		if _, err := sq.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(s.res.Queues.Queue[st]), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}

	for id, cl := range slowIDs {
		if got := accept(t, s, "k-"+cl, sample(t, cl, 1, "slow-"+cl[len(cl)-1:]+"@example.com")); got != id {
			t.Fatalf("job %s, want %s", got, id)
		}
	}
	for id, cl := range fastIDs {
		if got := accept(t, s, "k-"+cl, sample(t, cl, 1, "fast-"+cl[len(cl)-1:]+"@example.com")); got != id {
			t.Fatalf("job %s, want %s", got, id)
		}
	}
	for id := range fastIDs {
		s.waitJob(id, 90*time.Second, job.StatusSucceeded)
	}
	for id := range slowIDs {
		s.waitJob(id, 90*time.Second, job.StatusDeadLettered)
	}
	// Duplicates a kill leaves (the batch's originals beside the copies
	// of what it handed back) run their course too.
	eventually(t, 90*time.Second, "the llm queue to drain", func() bool {
		out, err := s.env.Clients.SQS.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.res.Queues.Queue[job.StageLLM]),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Attributes {
			if v != "0" {
				return false
			}
		}
		return true
	})
	if !killed.Load() {
		t.Fatal("no llm invocation held a slow review: nothing was killed")
	}

	// None sent twice, none lost: one email per fast review, none for a
	// slow one.
	for _, cl := range fastIDs {
		if n := perRecipient(emailsFor(t, s.env.SES, cl)); len(n) != 1 || n["fast-"+cl[len(cl)-1:]+"@example.com"] != 1 {
			t.Errorf("%s: emails per recipient %v, want exactly one", cl, n)
		}
	}
	for _, cl := range slowIDs {
		if n := len(emailsFor(t, s.env.SES, cl)); n != 0 {
			t.Errorf("%s: %d emails for a review that never finished", cl, n)
		}
	}

	// The ones that exhausted their receives are in the DLQ with the full
	// envelope the runner wrote on the last receive; nothing is raw.
	seen, receivesOut := map[job.ID]int{}, 0
	for _, b := range dlqBodies(t, s, job.StageLLM) {
		env, isEnv, err := deadletter.Decode([]byte(b))
		if err != nil || !isEnv {
			t.Errorf("a raw item in the llm DLQ (moved by the redrive policy, no envelope): %.200s (%v)", b, err)
			continue
		}
		id := job.ID(env.JobID)
		if _, ok := slowIDs[id]; !ok {
			t.Errorf("envelope for %s, which is not a slow review", env.JobID)
			continue
		}
		seen[id]++
		var m job.Message
		if err := json.Unmarshal([]byte(env.Original.Body), &m); err != nil || m.JobID != id {
			t.Errorf("%s: the envelope's original message %q does not replay the job (%v)", id, env.Original.Body, err)
		}
		// Its receives ran out (the runner wrote it on the last one), or,
		// for a message handed back uncharged along the way, its budget
		// did first.
		sc := env.SanitizedContext
		if env.Stage != "llm" || env.ErrorClass != string(retry.NetworkTimeout) || !env.Retryable || env.LastStack == "" ||
			env.Attempts < 1 || env.FirstFailureAt.IsZero() || env.LastFailureAt.Before(env.FirstFailureAt) || env.Original.MessageID == "" ||
			sc["exhausted"] != "true" || sc["receive_count"] == "" {
			t.Errorf("%s: envelope incomplete: %+v", id, env)
		}
		if sc["receives_exhausted"] == "true" {
			receivesOut++
			if sc["max_receive_count"] != strconv.Itoa(deadlineMaxReceives) {
				t.Errorf("%s: max_receive_count %q", id, sc["max_receive_count"])
			}
		}
	}
	for id, cl := range slowIDs {
		if seen[id] == 0 {
			t.Errorf("%s: no envelope in the llm DLQ", cl)
		}
	}
	batchMu.Lock()
	t.Logf("llm invocations %d (largest batch %d), overruns %d; envelopes per slow review %v, %d of them on the last receive",
		invocations.Load(), largest, overruns.Load(), seen, receivesOut)
	batchMu.Unlock()
}

// holdsOne reports whether a batch holds a message of one of the jobs.
func holdsOne(ev events.SQSEvent, ids map[job.ID]string) bool {
	for _, r := range ev.Records {
		var m job.Message
		if json.Unmarshal([]byte(r.Body), &m) == nil {
			if _, ok := ids[m.JobID]; ok {
				return true
			}
		}
	}
	return false
}
