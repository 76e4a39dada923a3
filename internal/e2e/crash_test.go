package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/wire"
	"os"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/testenv"
)

// updateHas matches a DynamoDB UpdateItem on a table whose expression
// values include v (e.g. "pending" only in a claim, "sent" in the mark).
func updateHas(table func() string, v string) func(any) bool {
	return func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if !ok || aws.ToString(u.TableName) != table() {
			return false
		}
		for _, av := range u.ExpressionAttributeValues {
			if s, ok := av.(*ddbtypes.AttributeValueMemberS); ok && s.Value == v {
				return true
			}
		}
		return false
	}
}

// crashCase is one boundary at which the notifier dies.
type crashCase struct {
	name  string
	rules func(s *stack) []fault.Rule
	// extra runs after the job is accepted (duplicate deliveries, redrives).
	extra func(t *testing.T, s *stack, id job.ID)
	wrap  func(s *stack) func(job.Stage, stage.Func) stage.Func
}

type crashResult struct {
	name           string
	expected, seen int
}

// Retries are safe under process crash, network timeout and worker
// restart (R-OUTBOX-10). Each case kills the notifier at one boundary of
// the send-then-mark protocol (R-OUTBOX-4, R-OUTBOX-7), or a stage between
// storing its result and enqueuing the next (R-STAGE-7), or races two
// workers, or redrives a delivered message, and then checks the SES store:
// exactly one email per (changelist, recipient, version).
func TestCrashPoints_ExactlyOneEmailPerRecipient(t *testing.T) {
	deliveries := func(s *stack) func() string { return func() string { return s.res.DeliveriesTable } }
	jobsTable := func(s *stack) func() string { return func() string { return s.res.JobsTable } }
	cases := []crashCase{
		{name: "during the claim, before it is written", rules: func(s *stack) []fault.Rule {
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(deliveries(s), "pending"), Kind: fault.Crash, When: fault.Before, Times: 1}}
		}},
		{name: "after the claim is written, before send", rules: func(s *stack) []fault.Rule {
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(deliveries(s), "pending"), Kind: fault.Crash, When: fault.After, Times: 1}}
		}},
		{name: "before send", rules: func(*stack) []fault.Rule {
			return []fault.Rule{{Service: "SESv2", Operation: "SendEmail", Kind: fault.Crash, When: fault.Before, Times: 1}}
		}},
		{name: "after the provider accepted, before the mark", rules: func(*stack) []fault.Rule {
			return []fault.Rule{{Service: "SESv2", Operation: "SendEmail", Kind: fault.Crash, When: fault.After, Times: 1}}
		}},
		{name: "mark write lost (provider accepted)", rules: func(s *stack) []fault.Rule {
			// Every attempt the SDK makes: the mark fails, and the row is
			// settled from the send's provider event.
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(deliveries(s), "sent"), Kind: fault.LoseRequest, Times: sdkAttempts}}
		}},
		{name: "mark answer lost (provider accepted, mark written)", rules: func(s *stack) []fault.Rule {
			// The SDK retries the mark; the retry fails its condition on
			// the mark's own write, which the store recognises.
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(deliveries(s), "sent"), Kind: fault.LoseAnswer, Times: 1}}
		}},
		{name: "claim answer lost (claim written)", rules: func(s *stack) []fault.Rule {
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(deliveries(s), "pending"), Kind: fault.LoseAnswer, Times: 1}}
		}},
		{name: "llm stored the review, crashed before enqueuing notify", rules: func(s *stack) []fault.Rule {
			// The llm message comes back; the stage finds its work done
			// and enqueues notify without reviewing again.
			return []fault.Rule{{Service: "SQS", Operation: "SendMessage", Match: func(in any) bool {
				m, ok := in.(*sqs.SendMessageInput)
				return ok && aws.ToString(m.QueueUrl) == s.res.Queues.Queue[job.StageNotify]
			}, Kind: fault.Crash, When: fault.Before, Times: 1}}
		}},
		{name: "after the mark, before finalization", rules: func(s *stack) []fault.Rule {
			return []fault.Rule{{Service: "DynamoDB", Operation: "UpdateItem", Match: updateHas(jobsTable(s), "succeeded"), Kind: fault.Crash, When: fault.Before, Times: 1}}
		}},
		{name: "two workers on the same job at once", rules: func(*stack) []fault.Rule {
			// Slow sends widen the race window.
			return []fault.Rule{{Service: "SESv2", Operation: "SendEmail", Kind: fault.Latency, Latency: 300 * time.Millisecond}}
		}, wrap: func(s *stack) func(job.Stage, stage.Func) stage.Func {
			// SQS delivers at least once: the llm stage's notify message
			// arrives twice, and two pollers take one each.
			return func(st job.Stage, fn stage.Func) stage.Func {
				if st != job.StageLLM {
					return fn
				}
				return func(ctx context.Context, m job.Message, attempt int) error {
					if err := fn(ctx, m, attempt); err != nil {
						return err
					}
					return s.fns.Queue.Enqueue(ctx, job.Message{JobID: m.JobID, Stage: job.StageNotify})
				}
			}
		}},
		{name: "DLQ redrive of a delivered message", rules: func(*stack) []fault.Rule { return nil },
			extra: func(t *testing.T, s *stack, id job.ID) {
				s.waitJob(id, 30*time.Second, job.StatusSucceeded)
				raw, _ := json.Marshal(job.Message{JobID: id, Stage: job.StageNotify})
				env := deadletter.New(deadletter.Failure{Stage: "notify", JobID: string(id), Err: deadletter.ErrRedriven,
					Message: deadletter.Original{MessageID: "redriven", Body: string(raw)}})
				envBody, _ := json.Marshal(env)
				for _, body := range []string{string(raw), string(envBody)} {
					if _, err := s.env.Clients.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
						QueueUrl: aws.String(s.res.Queues.Queue[job.StageNotify]), MessageBody: aws.String(body)}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(3 * time.Second) // both redriven messages are processed
			}},
	}
	var mu sync.Mutex
	var results []crashResult
	t.Cleanup(func() {
		tw := tabwriter.NewWriter(os.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "\nCRASH POINT\tEMAILS EXPECTED\tEMAILS SEEN")
		for _, r := range results {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", r.name, r.expected, r.seen)
		}
		tw.Flush()
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var s *stack
			inj := fault.New()
			// The sweeper runs, as on its schedule in a deployment: a send that
			// crashed mid-flight is resent only once it has seen the feedback
			// queue drained past the send (R-EVIDENCE-2).
			opts := devstack.FunctionOptions{Pollers: 2, SweepEvery: time.Second, Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}}
			if c.wrap != nil {
				opts.Wire.Wrap = func(st job.Stage, fn stage.Func) stage.Func { return c.wrap(s)(st, fn) }
			}
			s = startStack(t, opts, func(cfg *config.Config) {
				cfg.Notify.DeliveryLease, cfg.EvidenceMargin = time.Second, 2*time.Second
			})
			// A crashed invocation's message returns after the queue's
			// visibility timeout: keep it short here (Lambda: 6× the timeout).
			if _, err := s.env.Clients.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
				QueueUrl: aws.String(s.res.Queues.Queue[job.StageNotify]), Attributes: map[string]string{"VisibilityTimeout": "2"}}); err != nil {
				t.Fatal(err)
			}
			for _, r := range c.rules(s) {
				inj.Add(r)
			}
			cl := testenv.Prefix(t)
			recipients := []string{"one@example.com", "two@example.com"}
			id := accept(t, s, "k-"+cl, sample(t, cl, 1, recipients...))
			if c.extra != nil {
				c.extra(t, s, id)
			}
			v := s.waitJob(id, 60*time.Second, job.StatusSucceeded)
			time.Sleep(1500 * time.Millisecond) // any late duplicate would land now
			got := perRecipient(emailsFor(t, s.env.SES, cl))
			seen := got["one@example.com"] + got["two@example.com"]
			mu.Lock()
			results = append(results, crashResult{c.name, 2, seen})
			mu.Unlock()
			if got["one@example.com"] != 1 || got["two@example.com"] != 1 || len(got) != 2 {
				t.Fatalf("emails per recipient %v, want exactly one each", got)
			}
			for _, d := range v.Deliveries {
				if d.NotifiedAt == nil {
					t.Errorf("delivery %s has no notified_at", d.Recipient)
				}
			}
			if n := len(dlqBodies(t, s, job.StageNotify)); n != 0 {
				t.Errorf("notify DLQ holds %d messages", n)
			}
			for _, r := range c.rules(s) {
				if r.Kind != fault.Latency && inj.Fired(r.Service, r.Operation) == 0 {
					t.Errorf("the fault %s/%s never fired: the case tested nothing", r.Service, r.Operation)
				}
			}
		})
	}
}
