package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/app"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/testenv"
)

type inStageKey struct{}

// Seed 001 §8.1–8.2: a throttled or failing dependency is retryable. The
// first read of the job by each stage (DynamoDB GetItem) is throttled once:
// each stage must retry it within its budget, not dead-letter the job as
// NOT_FOUND at attempt 1 (found by `make chaos`, seed 1: every throttled
// job read became a permanent NOT_FOUND dead letter).
func TestStages_ThrottledJobRead_IsRetriedNotDeadLettered_001_8_2(t *testing.T) {
	t.Parallel()
	var fired [3]atomic.Int32
	inj := fault.New()
	inj.Choose(func(ctx context.Context, service, operation string, _ any) (fault.Rule, bool) {
		st, _ := ctx.Value(inStageKey{}).(job.Stage)
		if st == "" || service != "DynamoDB" || operation != "GetItem" {
			return fault.Rule{}, false
		}
		for i, s := range job.Stages() {
			if s == st && fired[i].Add(1) == 1 {
				return fault.Rule{Err: fault.Throttling, When: fault.Before}, true
			}
		}
		return fault.Rule{}, false
	})
	s := startStack(t, devstack.FunctionOptions{
		App: []app.Option{app.WithAWSOptions(inj.Option())},
		Wrap: func(st job.Stage, fn stage.Func) stage.Func {
			return func(ctx context.Context, m job.Message, attempt int) error {
				return fn(context.WithValue(ctx, inStageKey{}, st), m, attempt)
			}
		},
	})
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "solo@example.com"))

	v := s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	for _, st := range job.Stages() {
		if v.Attempts[st] != 2 {
			t.Errorf("attempts %v: want 2 for %s (one throttled read, one success)", v.Attempts, st)
		}
		if b := dlqBodies(t, s, st); len(b) != 0 {
			t.Errorf("%s DLQ holds %d messages, want none", st, len(b))
		}
	}
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want exactly 1", n)
	}
}

// Seed 000 §10.3: "Retries MUST be safe under process crash, network
// timeout, and worker restart"; §8.2: when the provider may have accepted a
// send, recover from provider evidence before any resend. A SendEmail that
// reached SES but whose answer the caller never saw as a success (its
// deadline passed, or a 5xx after the work was done) must not be sent again
// on the retry (found by `make chaos`, seed 8 at rate 0.15: such rows were
// released as failed and resent, one duplicate email each).
func TestNotify_AmbiguousSendFailure_ReconciledNotResent_000_10_3(t *testing.T) {
	for _, c := range []struct {
		name string
		err  func() error
	}{
		{"timeout after SES accepted", fault.Timeout},
		{"5xx after SES accepted", fault.InternalError},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := testenv.Prefix(t)
			did := delivery.ID(job.ChangelistKey("generic", cl), "solo@example.com", 1)
			inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", When: fault.After, Times: 1, Err: c.err},
				// Provider evidence lands 1.5 s after the send: later than
				// the stage's first retry, well within the grace window.
				fault.Rule{Service: "DynamoDB", Operation: "UpdateItem", Match: evidenceWrite(did), PassThrough: true, Latency: 1500 * time.Millisecond})
			s := startStack(t, devstack.FunctionOptions{App: []app.Option{app.WithAWSOptions(inj.Option())}}, func(cfg *config.Config) {
				cfg.DeliveryLease, cfg.ReconcileGrace = time.Second, 5*time.Second
			})
			id := accept(t, s, "k-"+cl, sample(t, cl, 1, "solo@example.com"))
			s.waitJob(id, 60*time.Second, job.StatusSucceeded)
			time.Sleep(1500 * time.Millisecond) // a late duplicate would land now
			if inj.Fired("SESv2", "SendEmail") != 1 {
				t.Fatal("the fault never fired")
			}
			if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
				t.Fatalf("%d emails, want exactly 1", n)
			}
		})
	}
}

// evidenceWrite matches the feedback function's write of a provider event
// on one delivery row.
func evidenceWrite(deliveryID string) func(any) bool {
	return func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if !ok {
			return false
		}
		if k, ok := u.Key["delivery_id"].(*ddbtypes.AttributeValueMemberS); !ok || k.Value != deliveryID {
			return false
		}
		for _, name := range u.ExpressionAttributeNames {
			if strings.HasPrefix(name, "evidence_") {
				return true
			}
		}
		return false
	}
}
