package feedback_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/feedback"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/testenv"
)

// These run the feedback function on the in-memory store, and again
// against DynamoDB Local when the stack is up (make test): the same
// protocol on both (R-STORE-1).

type queue struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *queue) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

type fixture struct {
	h    *feedback.Handler
	d    store.Outbox
	ev   store.EvidencePath
	q    *queue
	logs *bytes.Buffer
}

// forEachStore runs test on a fixture over the in-memory store and, when
// the stack is up, over DynamoDB Local.
func forEachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	newFixture := func(d store.Outbox, ev store.EvidencePath, jobs feedback.Reopener) *fixture {
		var logs bytes.Buffer
		f := &fixture{q: &queue{}, logs: &logs, d: d, ev: ev}
		f.h = &feedback.Handler{Deliveries: d, Evidence: ev, Jobs: jobs, Queue: f.q, Log: obs.NewLogger(&logs, "info")}
		return f
	}
	t.Run("memstore", func(t *testing.T) {
		test(t, newFixture(memstore.NewDeliveries(nil), memstore.NewEvidence(nil), memstore.NewJobs(nil)))
	})
	t.Run("dynamodb", func(t *testing.T) {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		test(t, newFixture(store.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, nil),
			store.NewEvidence(env.Clients.DynamoDB, res.JobsTable, nil), store.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)))
	})
}

// sent makes a row sent with the message id.
func (f *fixture) sent(t *testing.T, id, msgID string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if _, _, err := f.d.Ensure(ctx, delivery.Row{ID: id, JobID: "j_fb", Recipient: "r@example.com", Status: delivery.StatusPending,
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Claim(ctx, id, "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if msgID != "" {
		if _, err := f.d.MarkSent(ctx, id, "tok", msgID); err != nil {
			t.Fatal(err)
		}
	}
}

func sesEvent(typ, msgID, deliveryID string, at time.Time, extra string) string {
	tags := `{}`
	if deliveryID != "" {
		tags = fmt.Sprintf(`{"delivery_id":[%q]}`, deliveryID)
	}
	return fmt.Sprintf(`{"eventType":%q,"mail":{"messageId":%q,"timestamp":%q,"tags":%s}%s}`, typ, msgID, at.Format(time.RFC3339Nano), tags, extra)
}

func batch(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("sqs-%d", i), Body: b})
	}
	return ev
}

func metricCount(logs string, name string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "metric" && m[name] != nil {
			n++
		}
	}
	return n
}

// A provider event naming a message other than the row's is proof of a
// duplicate send: counted in DuplicateSends (once per message), logged as
// an error, never stored as the row's evidence.
// Rules: R-EVIDENCE-1.
func TestFeedback_AnotherMessagesEvent_DuplicateSendsMetric(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.sent(t, "d_1", "ses-1")
		at := time.Now().UTC()
		resp, err := f.h.Handle(context.Background(), batch(
			sesEvent("Send", "ses-1", "d_1", at, ""),
			sesEvent("Send", "ses-2", "d_1", at, ""),
			sesEvent("Delivery", "ses-2", "d_1", at, `,"delivery":{"timestamp":"`+at.Format(time.RFC3339Nano)+`"}`)))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %v %+v", err, resp)
		}
		if n := metricCount(f.logs.String(), "DuplicateSends"); n != 1 {
			t.Fatalf("DuplicateSends emitted %d times, want 1\n%s", n, f.logs)
		}
		r, _ := f.d.Get(context.Background(), "d_1")
		if r.Status != delivery.StatusSent || r.ProviderMessageID != "ses-1" {
			t.Fatalf("row %s provider %q: the duplicate's events were taken as the row's", r.Status, r.ProviderMessageID)
		}
	})
}

// Regression: a transient bounce for a delivery id with no row failed the
// record, which SQS retried ten times into the feedback DLQ. It is now
// logged, counted and dropped; the event still moves the watermark.
// Rules: R-EVIDENCE-4.
func TestFeedback_EventForUnknownRow_DroppedNotRetried(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		at := time.Now().UTC()
		resp, err := f.h.Handle(context.Background(), batch(
			sesEvent("Bounce", "ses-9", "d_nobody", at, `,"bounce":{"bounceType":"Transient","bounceSubType":"MailboxFull","timestamp":"`+at.Format(time.RFC3339Nano)+`"}`),
			sesEvent("Send", "ses-8", "d_nobody_either", at, "")))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %v, failures %+v; want none (dropped, not retried)", err, resp.BatchItemFailures)
		}
		if n := metricCount(f.logs.String(), "UnknownDeliveryEvents"); n != 2 {
			t.Fatalf("UnknownDeliveryEvents emitted %d times, want 2", n)
		}
		if wm, _ := f.ev.Watermark(context.Background(), ""); !wm.Equal(at.Truncate(time.Nanosecond)) {
			t.Fatalf("watermark %v, want %v", wm, at)
		}
	})
}

// Regression: a transient bounce on a row still in `sending` (its send's
// answer was lost) was taken as plain evidence and the row backfilled as
// sent. It now returns the row to be sent again, and notify is enqueued.
// Rules: R-EVIDENCE-5.
func TestFeedback_TransientBounceOnSendingRow_SentAgain(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		now := time.Now().UTC()
		if _, _, err := f.d.Ensure(ctx, delivery.Row{ID: "d_2", JobID: "j_fb", Recipient: "r@example.com", Status: delivery.StatusPending,
			CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.Claim(ctx, "d_2", "tok", -time.Second); err != nil { // lease already over
			t.Fatal(err)
		}
		resp, err := f.h.Handle(ctx, batch(sesEvent("Bounce", "ses-1", "d_2", now,
			`,"bounce":{"bounceType":"Transient","bounceSubType":"MailboxFull","timestamp":"`+now.Format(time.RFC3339Nano)+`"}`)))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %v %+v", err, resp)
		}
		r, _ := f.d.Get(ctx, "d_2")
		if r.Status != delivery.StatusFailedTransient || !r.NotifiedAt.IsZero() || r.HasEvidence() || delivery.Decide(r, time.Now()) != delivery.Claim {
			t.Fatalf("row after the bounce: %s notified %v evidence %v; want failed_transient and claimable", r.Status, r.NotifiedAt, r.HasEvidence())
		}
		if len(f.q.msgs) != 1 || f.q.msgs[0].Stage != job.StageNotify {
			t.Fatalf("enqueued %+v, want one notify message", f.q.msgs)
		}
	})
}

// An event the function fails to record holds the watermark back until a
// retry records it: it may be the only evidence that a send happened.
// Rules: R-EVIDENCE-2.
func TestFeedback_FailedEventHoldsTheWatermarkBack(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		old, newer := time.Now().UTC().Add(-time.Minute), time.Now().UTC()
		// A Bounce for a row in flight fails (retryable); a later event is fine.
		f.sent(t, "d_3", "")
		resp, _ := f.h.Handle(ctx, batch(
			sesEvent("Bounce", "ses-3", "d_3", old, `,"bounce":{"bounceType":"Transient","timestamp":"`+old.Format(time.RFC3339Nano)+`"}`),
			sesEvent("Send", "ses-x", "", newer, "")))
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "sqs-0" {
			t.Fatalf("failures %+v, want the bounce of the row in flight", resp.BatchItemFailures)
		}
		if wm, _ := f.ev.Watermark(ctx, ""); !wm.Before(old) {
			t.Fatalf("watermark %v passed the failed event of %v", wm, old)
		}
		st, _ := f.ev.State(ctx, "")
		if !st.Watermark.Equal(newer) || len(st.Pending) != 1 {
			t.Fatalf("state %+v, want watermark %v and one pending event", st, newer)
		}
	})
}
