package sesmail_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Regression: the SES v2 client kept the SDK's default retryer, so when
// SES stored a message and the answer was lost (a reset connection, a 5xx
// after the work, an answer slower than the client's timeout), the SDK
// sent it again inside one Send and returned the second message id: two
// emails, and nothing recorded it. The client sesmail.NewSES builds makes one
// attempt; the failure reaches the outbox, which settles it from provider
// evidence. Faults are injected at the HTTP client, under the SDK's retry
// loop, in front of the real SES emulator.
// Rules: R-OUTBOX-5.
func TestSender_LostAnswerIsNotResentByTheSDK(t *testing.T) {
	env := testenv.Stack(t)
	for _, k := range []fault.Rule{
		{Kind: fault.LoseAnswer},
		{Kind: fault.ServerError, When: fault.After},
		{Kind: fault.SlowAnswer},
	} {
		t.Run(k.Kind.String(), func(t *testing.T) {
			r := k
			r.Service, r.Operation, r.Times = "SESv2", "SendEmail", 1
			inj := fault.New(r)
			ep := config.EndpointsFromEnv(os.Getenv)
			cfg, err := profile.Load(context.Background(), ep, inj.Option())
			if err != nil {
				t.Fatal(err)
			}
			s := sesmail.NewSender(sesmail.NewSES(cfg, ep.SES), "Criticizer <criticizer@example.com>", "")
			did := "d_" + testenv.Prefix(t)
			_, err = s.Send(context.Background(), did, "rcpt@example.com", delivery.Message{Subject: did, Text: "t", HTML: "<p>t</p>"})
			var notSent *delivery.NotSentError
			if err == nil || errors.As(err, &notSent) {
				t.Fatalf("send = %v; want a failure that may have reached SES", err)
			}
			if c := retry.Classify(err).Class; c != retry.NetworkError && c != retry.NetworkTimeout && c != retry.Upstream5xx {
				t.Errorf("class %s; want a network or 5xx class (the outbox holds the row for evidence)", c)
			}
			emails, err := env.SES.Emails(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range emails {
				if e.Header(mail.DeliveryIDHeader) == did {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d messages in the SES store, want exactly 1 (stored once, not resent)", n)
			}
		})
	}
}

// A connection that was never made is a send that never happened: the
// outbox releases the row at once instead of holding it for evidence.
// Rules: R-OUTBOX-5, R-OUTBOX-9.
func TestSender_RefusedConnectionIsNotSent(t *testing.T) {
	ep := config.Endpoints{SES: "http://127.0.0.1:1"}
	cfg, err := profile.Load(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sesmail.NewSender(sesmail.NewSES(cfg, ep.SES), "Criticizer <criticizer@example.com>", "").Send(context.Background(), "d_x", "r@example.com", delivery.Message{})
	var notSent *delivery.NotSentError
	if !errors.As(err, &notSent) {
		t.Fatalf("send to a closed port = %v; want a NotSentError", err)
	}
}
