package e2e

import (
	"context"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/wire"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/testenv"
)

type inStageKey struct{}

// R-STAGE-1, R-STAGE-2: a throttled or failing dependency is retryable. The
// first read of the job by each stage (DynamoDB GetItem) is throttled once:
// each stage must retry it within its budget, not dead-letter the job as
// NOT_FOUND at attempt 1 (found by `make chaos`, seed 1: every throttled
// job read became a permanent NOT_FOUND dead letter).
func TestStages_ThrottledJobRead_IsRetriedNotDeadLettered(t *testing.T) {
	t.Parallel()
	var fired [3]atomic.Int32
	inj := fault.New()
	inj.Choose(func(ctx context.Context, service, operation string, _ any) (fault.Rule, bool) {
		st, _ := ctx.Value(inStageKey{}).(job.Stage)
		if st == "" || service != "DynamoDB" || operation != "GetItem" {
			return fault.Rule{}, false
		}
		for i, s := range job.Stages() {
			// Every attempt the SDK makes at the stage's first read: the
			// throttle reaches the stage.
			if s == st && int(fired[i].Add(1)) <= sdkAttempts {
				return fault.Rule{Kind: fault.Throttle}, true
			}
		}
		return fault.Rule{}, false
	})
	s := startStack(t, devstack.FunctionOptions{
		Wire: wire.Options{AWS: []awsclient.Option{inj.Option()},
			Wrap: func(st job.Stage, fn stage.Func) stage.Func {
				return func(ctx context.Context, m job.Message, attempt int) error {
					return fn(context.WithValue(ctx, inStageKey{}, st), m, attempt)
				}
			}},
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

// R-OUTBOX-10: "Retries MUST be safe under process crash, network
// timeout, and worker restart"; R-OUTBOX-6: when the provider may have accepted a
// send, recover from provider evidence before any resend. The SES emulator
// stores the message, and the answer never reaches the caller as a success:
// the connection drops, a 500 comes back, or the answer is slower than the
// client's timeout. The faults are below the SDK, at the HTTP client, so
// the SDK's own retry loop is part of the test (regression: the SES client
// kept the SDK's default retryer and resent the message itself, returning
// the second message id: two emails, every row "delivered"). Exactly one
// email; the row is backfilled as sent from the provider's Send event, with
// that message's id; nothing is resent or dead-lettered.
// Rules: R-OUTBOX-5.
func TestNotify_SendAnswerLost_SettledFromEvidence_NotResent(t *testing.T) {
	for _, c := range []struct {
		name string
		rule fault.Rule
	}{
		{"connection dropped after SES stored it", fault.Rule{Kind: fault.LoseAnswer}},
		{"500 after SES stored it", fault.Rule{Kind: fault.ServerError, When: fault.After}},
		{"answer slower than the client's timeout", fault.Rule{Kind: fault.SlowAnswer, Latency: 100 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := testenv.Prefix(t)
			const rcpt = "solo@example.com"
			did := delivery.ID(job.ChangelistKey("generic", cl), rcpt, 1)
			r := c.rule
			r.Service, r.Operation, r.Times = "SESv2", "SendEmail", 1
			inj := fault.New(r,
				// Provider evidence lands 1.5 s after the send: later than
				// the stage's first retry, so the row is seen held first.
				fault.Rule{Service: "DynamoDB", Operation: "UpdateItem", Match: evidenceWrite(did), Kind: fault.Latency, Latency: 1500 * time.Millisecond})
			s := startStack(t, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}}, func(cfg *config.Config) {
				cfg.Notify.DeliveryLease, cfg.EvidenceMargin = time.Second, 3*time.Second
			})
			id := accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))
			v := s.waitJob(id, 60*time.Second, job.StatusSucceeded)
			time.Sleep(1500 * time.Millisecond) // a late duplicate would land now
			if inj.Fired("SESv2", "SendEmail") != 1 {
				t.Fatal("the fault never fired")
			}
			emails := emailsFor(t, s.env.SES, cl)
			if len(emails) != 1 {
				t.Fatalf("%d emails, want exactly 1", len(emails))
			}
			row, err := s.fns.Deliveries.Get(context.Background(), did)
			if err != nil {
				t.Fatal(err)
			}
			if row.NotificationID != emails[0].MessageID || row.NotifiedAt.IsZero() || row.SendEventAt.IsZero() {
				t.Errorf("row %s: notification_id %q notified_at %v send event %v; want it backfilled from the Send event of %q",
					row.Status, row.NotificationID, row.NotifiedAt, row.SendEventAt, emails[0].MessageID)
			}
			if row.Attempts != 1 || row.ResentWithoutEvidence != 0 || len(row.DuplicateMessageIDs) != 0 {
				t.Errorf("row: %d attempts, %d resends without evidence, duplicates %v; want one send", row.Attempts, row.ResentWithoutEvidence, row.DuplicateMessageIDs)
			}
			if v.Deliveries[0].NotifiedAt == nil {
				t.Error("GET /jobs shows no notified_at")
			}
			if b := dlqBodies(t, s, job.StageNotify); len(b) != 0 {
				t.Errorf("notify DLQ holds %d messages", len(b))
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
