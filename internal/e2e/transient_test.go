package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/app"
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
