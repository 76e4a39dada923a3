package devstack_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/testenv"
)

// When event publishing to a topic is set up, SES first publishes a
// plain-text notice to it; with raw message delivery (the feedback queue's
// subscription, here as in infra) the feedback queue receives the bare
// text, before any event. Events follow for mail sent from then on, none
// for mail sent before. The bridge plays that part of SES.
func TestSESEventBridge_ValidationNoticeFirst_RawOnTheFeedbackQueue(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	res := testenv.Provision(t, env)
	subs, err := env.Clients.SNS.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(res.EventsTopicARN)})
	if err != nil || len(subs.Subscriptions) != 1 {
		t.Fatalf("subscriptions of the events topic: %+v %v", subs, err)
	}
	attrs, err := env.Clients.SNS.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: subs.Subscriptions[0].SubscriptionArn})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["RawMessageDelivery"] != "true" {
		t.Fatalf("the feedback queue's subscription has RawMessageDelivery %q; infra sets true", attrs.Attributes["RawMessageDelivery"])
	}

	send := func(subject string) string {
		out, err := env.Clients.SES.SendEmail(ctx, &sesv2.SendEmailInput{FromEmailAddress: aws.String("criticizer@example.com"),
			Destination: &sestypes.Destination{ToAddresses: []string{"bridge-test@example.com"}},
			Content: &sestypes.EmailContent{Simple: &sestypes.Message{Subject: &sestypes.Content{Data: aws.String(subject)},
				Body: &sestypes.Body{Text: &sestypes.Content{Data: aws.String(subject)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.MessageId)
	}
	send("sent before the event destination existed")
	before, err := env.SES.Emails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, e := range before {
		old[e.MessageID] = true
	}
	b := &devstack.SESEventBridge{Store: env.SES, SNS: env.Clients.SNS, TopicARN: res.EventsTopicARN,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(bctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, env.Clients.SQS, res.FeedbackQueue) > 0 })
	// Mail sent now gets events; mail sent before the bridge started (by
	// other tests: the SES emulator is shared) gets none.
	sent := send("sent after")
	var msgs []sqstypes.Message
	waitFor(t, 10*time.Second, func() bool {
		msgs = append(msgs, drain(t, env.Clients.SQS, res.FeedbackQueue)...)
		n := 0
		for _, m := range msgs {
			if strings.Contains(aws.ToString(m.Body), sent) {
				n++
			}
		}
		return n == 2 // Send and Delivery
	})
	var notices int
	var noticeAt int64
	for _, m := range msgs {
		if aws.ToString(m.Body) == devstack.ValidationNotice {
			notices++
			noticeAt, _ = strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
		}
	}
	if notices != 1 {
		t.Fatalf("%d validation notices among %d messages, want exactly 1 with the bare text %q", notices, len(msgs), devstack.ValidationNotice)
	}
	for _, m := range msgs {
		if at, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); at < noticeAt {
			t.Fatalf("an event (%.60s) was published before the validation notice", aws.ToString(m.Body))
		}
		var ev struct {
			Mail struct{ MessageID string } `json:"mail"`
		}
		if json.Unmarshal([]byte(aws.ToString(m.Body)), &ev) == nil && old[ev.Mail.MessageID] {
			t.Fatalf("an event for mail sent before the bridge started: %.80s", aws.ToString(m.Body))
		}
	}
}

// SES publishes events only for mail sent through the configuration set;
// the emulator's store is shared by every stack on it (make test runs
// each package against one), so a bridge with Accept publishes events of
// its own stack's mail only. Without it the chaos campaign's feedback
// queue received the events of other packages' mail, some after its
// workers had stopped, and reported them never processed.
func TestSESEventBridge_Accept_OnlyThisStacksMailGetsEvents(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	res := testenv.Provision(t, env)
	mine := "mine." + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	send := func(to, subject string) string {
		out, err := env.Clients.SES.SendEmail(ctx, &sesv2.SendEmailInput{FromEmailAddress: aws.String("criticizer@example.com"),
			Destination: &sestypes.Destination{ToAddresses: []string{to}},
			Content: &sestypes.EmailContent{Simple: &sestypes.Message{Subject: &sestypes.Content{Data: aws.String(subject)},
				Body: &sestypes.Body{Text: &sestypes.Content{Data: aws.String(subject)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.MessageId)
	}
	b := &devstack.SESEventBridge{Store: env.SES, SNS: env.Clients.SNS, TopicARN: res.EventsTopicARN,
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Accept: func(e devstack.StoredEmail) bool { return slices.Contains(e.Destination.To, mine) }}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(bctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, env.Clients.SQS, res.FeedbackQueue) > 0 })
	// Another stack's mail is stored first: the bridge reaches it before
	// (or in the same poll as) this stack's, so once this stack's events
	// are on the queue, any event of the other would be too.
	other := send("other-stack@example.com", "another stack's mail")
	own := send(mine, "this stack's mail")
	var msgs []sqstypes.Message
	count := func(id string) int {
		n := 0
		for _, m := range msgs {
			if strings.Contains(aws.ToString(m.Body), id) {
				n++
			}
		}
		return n
	}
	waitFor(t, 10*time.Second, func() bool {
		msgs = append(msgs, drain(t, env.Clients.SQS, res.FeedbackQueue)...)
		return count(own) == 2
	})
	if n := count(other); n != 0 {
		t.Fatalf("%d events of another stack's mail reached this stack's feedback queue; want none", n)
	}
}
