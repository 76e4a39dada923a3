package chaos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
)

// A timeout kill is drawn only for a call inside an invocation the poller
// runs (it must be killed there), never for the intake function or a
// poller's own loop; every function gets one at its first call, even at
// rate 0; the stall ends when the invocation is killed.
func TestInjector_TimeoutKill_FirstCallOfEachFunction_OnlyInPolledInvocations(t *testing.T) {
	in := newInjector(7, 0)
	in.on.Store(true)
	if _, ok := in.choose(withScope(context.Background(), &scope{crashable: true, fn: "fetch"}), "DynamoDB", "GetItem", nil); ok {
		t.Fatal("a call outside a polled invocation got a fault at rate 0")
	}
	if _, ok := in.choose(withScope(context.Background(), &scope{crashable: true}), "DynamoDB", "GetItem", nil); ok {
		t.Fatal("the intake function got a timeout kill")
	}
	for _, fn := range killedFunctions() {
		inv := &devstack.Invocation{}
		ctx := withScope(devstack.WithInvocation(context.Background(), inv), &scope{crashable: true, fn: fn})
		r, ok := in.choose(ctx, "DynamoDB", "GetItem", nil)
		if !ok || r.Kind != fault.Stall || r.Until == nil {
			t.Fatalf("%s's first call: %+v, %v; want a stall until the kill", fn, r, ok)
		}
		if r.Until(ctx) {
			t.Fatalf("%s: the stall ends before the kill", fn)
		}
		inv.Kill()
		if !r.Until(ctx) {
			t.Fatalf("%s: the stall outlives the kill", fn)
		}
		if _, ok := in.choose(ctx, "DynamoDB", "GetItem", nil); ok {
			t.Fatalf("%s's second call faulted at rate 0", fn)
		}
	}
	if in.stalled() {
		t.Fatal("stalled() is true before any SES send was killed")
	}
	inv := &devstack.Invocation{}
	ctx := withScope(devstack.WithInvocation(context.Background(), inv), &scope{crashable: true, fn: "notify"})
	r, ok := in.choose(ctx, "SESv2", "SendEmail", nil)
	if !ok || r.Kind != fault.Stall || r.When != fault.After {
		t.Fatalf("the first SES send: %+v, %v; want a stall after SES accepted it", r, ok)
	}
	if !in.stalled() {
		t.Fatal("every function and a send had their kill, yet stalled() is false")
	}
	if _, ok := in.choose(ctx, "SESv2", "SendEmail", nil); ok {
		t.Fatal("the second SES send faulted at rate 0")
	}
}

// The Send event of a send whose answer a fault lost (lose_answer; a
// stall after SES accepted) is held late: the row waits for exactly that
// event, even once faults are off. Any message is held at most once; a
// validation notice is not.
func TestPlatformFaults_HoldsSendEventsOfLostAnswers_Once(t *testing.T) {
	in := newInjector(3, 1)
	in.on.Store(true)
	send := func(did string) any {
		return &sesv2.SendEmailInput{EmailTags: []sestypes.MessageTag{{Name: aws.String(mail.DeliveryIDTag), Value: aws.String(did)}}}
	}
	lostOne := ""
	for i := range 200 {
		did := "d" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		r, _ := in.choose(context.Background(), "SESv2", "SendEmail", send(did))
		if answerLost(r) {
			lostOne = did
			break
		}
	}
	if lostOne == "" || !in.answerWasLost(lostOne) {
		t.Fatal("no lost answer recorded in 200 faulted sends")
	}
	pf := newPlatformFaults(5, 0, func(string) (job.ID, bool) { return "", false }, in.answerWasLost)
	pf.on.Store(true)
	pf.byKind[KindEventLate] = 1 // past the forced first: only lost answers are held at rate 0
	msg := func(id, did, typ string) events.SQSMessage {
		b, _ := json.Marshal(map[string]any{"eventType": typ, "mail": map[string]any{"messageId": "ses-" + id,
			"timestamp": time.Now().UTC().Format(time.RFC3339), "tags": map[string][]string{mail.DeliveryIDTag: {did}}}})
		return events.SQSMessage{MessageId: id, Body: string(b)}
	}
	if d := pf.hold("feedback", msg("m1", lostOne, "Send")); d < lateMin*time.Second || d >= (lateMin+lateSpread)*time.Second {
		t.Fatalf("the Send event of a lost answer is held %s, want 18–36 s", d)
	}
	if d := pf.hold("feedback", msg("m1", lostOne, "Send")); d != 0 {
		t.Fatalf("a message back from its hold is held again (%s)", d)
	}
	if d := pf.hold("feedback", msg("m2", lostOne, "Delivery")); d != 0 {
		t.Fatalf("a Delivery event held at rate 0 (%s)", d)
	}
	if d := pf.hold("notify", msg("m3", lostOne, "Send")); d != 0 {
		t.Fatal("a stage message held")
	}
	if d := pf.hold("feedback", events.SQSMessage{MessageId: "m4", Body: devstack.ValidationNotice}); d != 0 {
		t.Fatal("a validation notice held")
	}
	pf.on.Store(false)
	if d := pf.hold("feedback", msg("m5", lostOne, "Send")); d == 0 {
		t.Fatal("the Send event of a lost answer arriving once faults are off is not held")
	}
	if pf.heldLost != 2 {
		t.Fatalf("heldLost = %d, want 2", pf.heldLost)
	}
}

// A doomed feedback record is failed on every receive, after faults stop
// too, so SQS dead-letters it; its redriven copy (a new id) is processed.
func TestPlatformFaults_DoomedRecordFailsEveryReceive_RedrivenCopyProcessed(t *testing.T) {
	pf := newPlatformFaults(5, 0, func(string) (job.ID, bool) { return "", false }, func(string) bool { return false })
	var seen []string
	h := pf.feedback(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, r := range ev.Records {
			seen = append(seen, r.MessageId)
		}
		return events.SQSEventResponse{}, nil
	})
	pf.on.Store(true)
	batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}}}
	for i := range 3 {
		if i == 1 {
			pf.on.Store(false)
		}
		resp, err := h(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "a" {
			t.Fatalf("receive %d: failures %+v, %v; want the first record (forced) failed", i+1, resp.BatchItemFailures, err)
		}
	}
	if len(seen) != 3 || seen[0] != "b" {
		t.Fatalf("the function saw %v, want b three times", seen)
	}
	resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a-redriven"}}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatal("the redriven copy, with its new id, is failed too")
	}
	if pf.injected()[KindFeedbackRedrive] != 1 {
		t.Fatalf("feedback_redrive counted %d, want 1", pf.injected()[KindFeedbackRedrive])
	}
}
