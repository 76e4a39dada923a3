package sesevent

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/mail"
)

// sesSeeds are SES event bodies: the recorded feedback queue message in
// events/ and one event of each other type Criticizer reads, in the shape
// of the SES developer guide's examples.
func sesSeeds(f *testing.F) [][]byte {
	f.Helper()
	raw, err := os.ReadFile("../../events/feedback-sqs.json")
	if err != nil {
		f.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, r := range ev.Records {
		out = append(out, []byte(r.Body))
	}
	return append(out,
		[]byte(`{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"r@example.com"}],"timestamp":"2026-11-22T06:00:03.000Z","feedbackId":"f"},"mail":{"timestamp":"2026-11-22T06:00:01.000Z","messageId":"m-1","tags":{"delivery_id":["d_1"]}}}`),
		[]byte(`{"eventType":"Complaint","complaint":{"complainedRecipients":[{"emailAddress":"r@example.com"}],"timestamp":"2026-11-22T07:00:00.000Z"},"mail":{"timestamp":"2026-11-22T06:00:01.000Z","messageId":"m-2","tags":{"delivery_id":["d_2","d_3"]}}}`),
		[]byte(`{"eventType":"Reject","reject":{"reason":"Bad content"},"mail":{"timestamp":"2026-11-22T06:00:01.000Z","messageId":"m-3","tags":{}}}`),
		[]byte(`{"Type":"Notification","MessageId":"sns-1","TopicArn":"arn:aws:sns:us-east-1:123456789012:t","Message":"{\"eventType\":\"Send\",\"mail\":{\"messageId\":\"m-4\",\"timestamp\":\"2026-11-22T06:00:01Z\"}}"}`),
		[]byte(`{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}`),
		[]byte(`{"eventType":"Delivery","mail":{"messageId":"m","timestamp":"not a time"}}`),
		[]byte(`null`), []byte(``),
	)
}

// FuzzParseSESEvent: the feedback queue carries whatever SNS delivers, so
// the parser must never panic; every rejection wraps ErrNotSESEvent (the
// handler reports it as a batch item failure and the redrive policy keeps
// it, R-OUTBOX-6); every accepted event names its type and SES message
// id; DeliveryID is the first delivery_id tag; At is one of the event's own
// timestamps; and an event read from a raw body reads the same when SNS
// wraps it in a Notification envelope (raw message delivery off).
func FuzzParseSESEvent(f *testing.F) {
	for _, b := range sesSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := Parse(body)
		if err != nil {
			if !errors.Is(err, ErrNotEvent) {
				t.Fatalf("rejection does not wrap ErrNotSESEvent: %v", err)
			}
			return
		}
		if ev.EventType == "" || ev.Mail.MessageID == "" {
			t.Fatalf("accepted an event without type or message id: %+v", ev)
		}
		if tags := ev.Mail.Tags[mail.DeliveryIDTag]; (len(tags) == 0 && ev.DeliveryID() != "") || (len(tags) > 0 && ev.DeliveryID() != tags[0]) {
			t.Fatalf("DeliveryID %q, tags %q", ev.DeliveryID(), tags)
		}
		at := ev.At()
		own := at.Equal(ev.Mail.Timestamp) ||
			(ev.Delivery != nil && at.Equal(ev.Delivery.Timestamp)) ||
			(ev.Bounce != nil && at.Equal(ev.Bounce.Timestamp)) ||
			(ev.Complaint != nil && at.Equal(ev.Complaint.Timestamp))
		if !own {
			t.Fatalf("At %v is none of the event's timestamps", at)
		}

		var probe struct{ Type string }
		if json.Unmarshal(body, &probe) != nil || probe.Type == "Notification" || !utf8.Valid(body) {
			return // already an envelope, or bytes a JSON string cannot carry
		}
		env, err := json.Marshal(events.SNSEntity{Type: "Notification", MessageID: "sns-1", Message: string(body)})
		if err != nil {
			t.Fatal(err)
		}
		wrapped, err := Parse(env)
		if err != nil {
			t.Fatalf("raw body accepted, SNS-wrapped rejected: %v", err)
		}
		if !reflect.DeepEqual(wrapped, ev) {
			t.Fatalf("SNS-wrapped event differs:\n raw %+v\nwrapped %+v", ev, wrapped)
		}
	})
}
