package devstack_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/testenv"
)

// When event publishing to a topic is set up, SES first publishes a
// plain-text notice to it; with raw message delivery (the feedback queue's
// subscription, here as in infra) the feedback queue receives the bare
// text, before any event. The bridge plays that part of SES.
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

	b := &devstack.SESEventBridge{Store: env.SES, SNS: env.Clients.SNS, TopicARN: res.EventsTopicARN,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(bctx); close(done) }()
	// The SES store is shared: other tests' mail gives the bridge events to
	// publish too.
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, env.Clients.SQS, res.FeedbackQueue) > 0 })
	time.Sleep(time.Second)
	cancel()
	<-done
	msgs := drain(t, env.Clients.SQS, res.FeedbackQueue)
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
	}
}
