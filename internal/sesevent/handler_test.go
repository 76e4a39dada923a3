package sesevent_test

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

	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
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
	h    *sesevent.Handler
	d    store.Deliveries
	ev   store.Evidence
	q    *queue
	logs *bytes.Buffer
}

// forEachStore runs test on a fixture over the in-memory store and, when
// the stack is up, over DynamoDB Local.
func forEachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	newFixture := func(d store.Deliveries, ev store.Evidence, jobs sesevent.Reopener) *fixture {
		var logs bytes.Buffer
		f := &fixture{q: &queue{}, logs: &logs, d: d, ev: ev}
		f.h = &sesevent.Handler{Deliveries: d, Evidence: ev, Jobs: jobs, Queue: f.q, Log: obs.NewLogger(&logs, "info")}
		return f
	}
	t.Run("memstore", func(t *testing.T) {
		test(t, newFixture(memstore.NewDeliveries(nil), memstore.NewEvidence(nil), memstore.NewJobs(nil)))
	})
	t.Run("dynamodb", func(t *testing.T) {
		env := testenv.Stack(t)
		res := testenv.Provision(t, env)
		test(t, newFixture(dynamo.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, nil),
			dynamo.NewEvidence(env.Clients.DynamoDB, res.JobsTable, nil), dynamo.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)))
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
// logged, counted and dropped; the event still moves the newest event time.
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
		if st, _ := f.ev.State(context.Background(), ""); !st.Newest.Equal(at.Truncate(time.Nanosecond)) {
			t.Fatalf("newest event %v, want %v", st.Newest, at)
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

// An event the function fails to record is reported as a failure, so it
// stays in the queue (the drain time cannot pass it, internal/drain); the
// events recorded move the newest event time, whatever their order.
// Rules: R-EVIDENCE-2.
func TestFeedback_FailedEventStaysInTheQueue(t *testing.T) {
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
		if st, _ := f.ev.State(ctx, ""); !st.Newest.Equal(newer) || !st.Drained.IsZero() {
			t.Fatalf("state %+v, want the newest event %v recorded and no drain time (the queue's to say)", st, newer)
		}
	})
}

// SES's validation notice, sent when event publishing to the topic is set
// up, is acknowledged — as raw text and inside an SNS envelope — not
// retried into the feedback DLQ; anything else that is not an SES event
// still is.
// Rules: R-EVIDENCE-8.
func TestFeedback_ValidationNoticeAcknowledged(t *testing.T) {
	f := &fixture{q: &queue{}, logs: &bytes.Buffer{}}
	f.h = &sesevent.Handler{Deliveries: memstore.NewDeliveries(nil), Log: obs.NewLogger(f.logs, "info")}
	envelope, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": "m", "TopicArn": "arn:aws:sns:us-east-1:1:t",
		"Message": sesevent.ValidationNotice})
	resp, err := f.h.Handle(context.Background(), batch(sesevent.ValidationNotice, string(envelope), "Successfully validated SNS topic, not quite."))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "sqs-2" {
		t.Fatalf("failures %+v, want only the record that is neither an event nor the notice", resp.BatchItemFailures)
	}
}

// A Reject fails the row for good: SES refused the message's content and
// would refuse it again. The row is failed_permanent with class REJECTED,
// nothing is enqueued, a Reject of another message is ignored, and the
// same Reject again changes nothing.
// Rules: R-EVIDENCE-8, R-OUTBOX-9.
func TestFeedback_RejectIsPermanent(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		now := time.Now().UTC()
		f.sent(t, "d_rej", "ses-rej")
		other := sesEvent("Reject", "ses-other", "d_rej", now, `,"reject":{"reason":"Bad content"}`)
		if resp, _ := f.h.Handle(ctx, batch(other)); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("a Reject of another message: %+v", resp.BatchItemFailures)
		}
		if r, _ := f.d.Get(ctx, "d_rej"); r.Status != delivery.StatusSent {
			t.Fatalf("after another message's Reject the row is %s, want sent", r.Status)
		}
		reject := sesEvent("Reject", "ses-rej", "d_rej", now, `,"reject":{"reason":"Bad content"}`)
		for range 2 {
			if resp, _ := f.h.Handle(ctx, batch(reject)); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %+v", resp.BatchItemFailures)
			}
		}
		r, _ := f.d.Get(ctx, "d_rej")
		if r.Status != delivery.StatusFailedPermanent || r.LastErrorClass != store.RejectedClass || r.RejectedAt.IsZero() {
			t.Fatalf("row %s/%s rejected %v, want failed_permanent REJECTED with the evidence", r.Status, r.LastErrorClass, r.RejectedAt)
		}
		if delivery.Decide(r, time.Now().Add(time.Hour)) == delivery.Claim {
			t.Fatal("a rejected row is claimable: it would be sent again")
		}
		if len(f.q.msgs) != 0 {
			t.Fatalf("enqueued %+v after a Reject, want nothing: it is not sent again", f.q.msgs)
		}
	})
}

// A Send event that reached the queue later than the bound after SES
// accepted its message is counted (LateSendEvents) and logged as an error;
// one within the bound is only measured.
// Rules: R-EVIDENCE-7.
func TestFeedback_LateSendEventCounted(t *testing.T) {
	logs := &bytes.Buffer{}
	h := &sesevent.Handler{Deliveries: memstore.NewDeliveries(nil), Log: obs.NewLogger(logs, "info"), Bound: 5 * time.Minute}
	accepted := time.Now().UTC().Add(-time.Hour)
	rec := func(id string, arrived time.Time) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: sesEvent("Send", "ses-"+id, "", accepted, ""),
			Attributes: map[string]string{"SentTimestamp": fmt.Sprint(arrived.UnixMilli())}}
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("on-time", accepted.Add(3*time.Second)), rec("late", accepted.Add(7*time.Minute))}}); err != nil {
		t.Fatal(err)
	}
	if n := metricCount(logs.String(), "SendEventLatenessSeconds"); n != 2 {
		t.Errorf("%d lateness measurements, want 2", n)
	}
	if n := metricCount(logs.String(), "LateSendEvents"); n != 1 {
		t.Errorf("%d LateSendEvents, want 1 (the event 7 minutes late against a 5-minute bound)", n)
	}
}

// A batch near its invocation's deadline: the records after the first
// that no longer fit are reported as failures, untouched, to come back
// whole, instead of the whole batch being lost to Lambda's timeout.
// Rules: R-STAGE-9.
func TestFeedback_DeadlineHandsBackTheRest(t *testing.T) {
	t0 := time.Now()
	calls := 0
	clock := func() time.Time { calls++; return t0.Add(time.Duration(calls-1) * 2 * time.Second) }
	logs := &bytes.Buffer{}
	d := memstore.NewDeliveries(nil)
	h := &sesevent.Handler{Deliveries: d, Log: obs.NewLogger(logs, "info"), Budget: deadline.Budget{Need: 2 * time.Second, Now: clock}}
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(3*time.Second))
	defer cancel()
	at := time.Now().UTC()
	resp, err := h.Handle(ctx, batch(sesEvent("Send", "ses-1", "", at, ""), sesEvent("Send", "ses-2", "", at, ""), sesEvent("Send", "ses-3", "", at, "")))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != "sqs-1" {
		t.Fatalf("failures %+v, want the two records that no longer fit", resp.BatchItemFailures)
	}
}

// A Reject or a bounce after the Send undoes the send: the quiet rows
// that stood on it — superseded by it, or the same diff as it — and,
// in turn, the rows that stood on those, go back to pending, each job
// reopened at notify and a notify message sent, so the notifier decides
// them again (R-QUIET-4). A row settled again since keeps its course;
// the event delivered twice revives nothing twice. A complaint undoes
// nothing: the reader had the message.
// Rules: R-QUIET-4, R-EVIDENCE-8, R-EVIDENCE-6.
func TestFeedback_UndoneSendRevivesTheRowsThatStoodOnIt(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		now := time.Now().UTC()
		pending := func(id string, j job.ID) {
			t.Helper()
			if _, _, err := f.d.Ensure(ctx, delivery.Row{ID: id, JobID: j, Recipient: "r@example.com", Status: delivery.StatusPending,
				CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		settle := func(id string, status delivery.Status, on string) {
			t.Helper()
			if _, err := f.d.SettleQuiet(ctx, id, status, "v9", on); err != nil {
				t.Fatalf("settle %s on %s: %v", id, on, err)
			}
		}
		for _, c := range []struct{ name, event string }{
			{"reject", `,"reject":{"reason":"Bad content"}`},
			{"permanent-bounce", `,"bounce":{"bounceType":"Permanent","bounceSubType":"General"}`},
			{"complaint", `,"complaint":{"complaintFeedbackType":"abuse"}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				f.q.msgs = nil
				undone, v1, v0, v3, v4 := "d_"+c.name+"_2", "d_"+c.name+"_1", "d_"+c.name+"_0", "d_"+c.name+"_3", "d_"+c.name+"_4"
				f.sent(t, undone, "ses-"+c.name)
				pending(v1, "j_v1")
				pending(v0, "j_v0")
				pending(v3, "j_v3")
				pending(v4, "j_v4")
				settle(v1, delivery.StatusSuperseded, undone)      // v1 superseded by it
				settle(v0, delivery.StatusSuperseded, v1)          // v0 superseded by v1 in turn
				settle(v3, delivery.StatusSkippedSameDiff, undone) // v3: the same diff
				settle(v4, delivery.StatusSkippedSameDiff, v3)     // v4: the same diff as v3
				typ := map[string]string{"reject": "Reject", "permanent-bounce": "Bounce", "complaint": "Complaint"}[c.name]
				ev := sesEvent(typ, "ses-"+c.name, undone, now, c.event)
				for range 2 {
					if resp, _ := f.h.Handle(ctx, batch(ev)); len(resp.BatchItemFailures) != 0 {
						t.Fatalf("failures %+v", resp.BatchItemFailures)
					}
				}
				if c.name == "complaint" {
					for _, id := range []string{v1, v0, v3, v4} {
						if r, _ := f.d.Get(ctx, id); !r.Status.Quiet() {
							t.Errorf("%s is %s after a complaint, want it still settled quietly: the reader had the message", id, r.Status)
						}
					}
					if len(f.q.msgs) != 0 {
						t.Errorf("enqueued %+v after a complaint", f.q.msgs)
					}
					return
				}
				for _, id := range []string{v1, v0, v3, v4} {
					r, _ := f.d.Get(ctx, id)
					if r.Status != delivery.StatusPending || r.StandsOn != "" || r.RevivedFrom == "" || !r.Unsent() {
						t.Errorf("%s is %s on %q (revived from %q), want pending again, never sent", id, r.Status, r.StandsOn, r.RevivedFrom)
					}
				}
				jobs := map[job.ID]int{}
				for _, m := range f.q.msgs {
					if m.Stage != job.StageNotify || m.Task != "" {
						t.Errorf("enqueued %+v, want a job's notify message", m)
					}
					jobs[m.JobID]++
				}
				for _, j := range []job.ID{"j_v1", "j_v0", "j_v3", "j_v4"} {
					if jobs[j] == 0 {
						t.Errorf("no notify message for %s; enqueued %v", j, jobs)
					}
				}
				// Settled again since (its notify found a newer version that
				// reached the reader): a late copy of the event leaves it.
				f.sent(t, "d_"+c.name+"_9", "ses-9-"+c.name)
				settle(v1, delivery.StatusSuperseded, "d_"+c.name+"_9")
				if resp, _ := f.h.Handle(ctx, batch(ev)); len(resp.BatchItemFailures) != 0 {
					t.Fatalf("failures %+v", resp.BatchItemFailures)
				}
				if r, _ := f.d.Get(ctx, v1); r.Status != delivery.StatusSuperseded || r.StandsOn != "d_"+c.name+"_9" {
					t.Errorf("a late copy of the event moved %s, settled again since, to %s", v1, r.Status)
				}
			})
		}
	})
}
