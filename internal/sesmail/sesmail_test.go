package sesmail_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/smithy-go/middleware"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Adapter test against the SES v2 emulator: the sender delivers the rendered
// message with the delivery id header (the provider idempotency token of
// R-OUTBOX-3) and returns SES's message id.
func TestSender_SendsRenderedMessageWithDeliveryIDHeader(t *testing.T) {
	env := testenv.Stack(t)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	cl := testenv.Prefix(t)
	m, err := r.Render(mail.Data{ChangelistID: cl, ReviewVersion: 2, Title: "Title", URL: "https://x.example/1", Author: "a",
		Critique: critic.Critique{Critic: "offline/v1", Summary: "Nothing to see."}})
	if err != nil {
		t.Fatal(err)
	}
	s := sesmail.NewSender(env.Clients.SES, "Criticizer <criticizer@example.com>", "")
	id, err := s.Send(context.Background(), "d_test123", "rcpt@example.com", m)
	if err != nil || id == "" {
		t.Fatalf("send: %q %v", id, err)
	}
	emails, err := env.SES.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range emails {
		if e.MessageID != id {
			continue
		}
		if e.Subject != m.Subject || e.Body.HTML != m.HTML || e.Body.Text != m.Text || e.Destination.To[0] != "rcpt@example.com" {
			t.Fatalf("stored email differs from the rendered message: %+v", e)
		}
		if e.Header(mail.DeliveryIDHeader) != "d_test123" {
			t.Fatalf("delivery id header %q", e.Header(mail.DeliveryIDHeader))
		}
		return
	}
	t.Fatalf("message %s not in the SES store", id)
}

// captureSendEmail returns an SES client that talks to the same emulator
// and records each SendEmail input as the SDK sends it (the emulator does
// not keep message tags, so they are read off the request).
func captureSendEmail(c *sesv2.Client) (*sesv2.Client, *[]*sesv2.SendEmailInput) {
	var seen []*sesv2.SendEmailInput
	capture := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("criticizer-capture",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if p, ok := in.Parameters.(*sesv2.SendEmailInput); ok {
					seen = append(seen, p)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
	return sesv2.New(c.Options(), func(o *sesv2.Options) { o.APIOptions = append(o.APIOptions, capture) }), &seen
}

// RFC 8058: a message with an unsubscribe URL carries
// "List-Unsubscribe: <URL>" and "List-Unsubscribe-Post:
// List-Unsubscribe=One-Click", so mailbox providers offer one-click
// unsubscribe; the delivery id header stays (R-OUTBOX-3), and the SES
// tags (delivery id, template version) use only SES's tag charset.
func TestSender_OneClickUnsubscribeHeaders_RFC8058(t *testing.T) {
	env := testenv.Stack(t)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	d := mail.SampleData()
	d.ChangelistID = testenv.Prefix(t)
	d.UnsubscribeURL = "https://criticizer.example.com/unsubscribe?token=" + d.ChangelistID
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	client, seen := captureSendEmail(env.Clients.SES)
	s := sesmail.NewSender(client, "Criticizer <criticizer@example.com>", "")
	id, err := s.Send(context.Background(), "d_unsub1", "rcpt@example.com", m)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	e := storedEmail(t, env, id)
	if got, want := e.Header(mail.ListUnsubscribeHeader), "<"+d.UnsubscribeURL+">"; got != want {
		t.Errorf("List-Unsubscribe = %q; want %q", got, want)
	}
	if got := e.Header(mail.ListUnsubscribePostHeader); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q; want List-Unsubscribe=One-Click", got)
	}
	if got := e.Header(mail.DeliveryIDHeader); got != "d_unsub1" {
		t.Errorf("delivery id header = %q", got)
	}
	if len(*seen) != 1 {
		t.Fatalf("captured %d SendEmail calls; want 1", len(*seen))
	}
	tags := map[string]string{}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	for _, tag := range (*seen)[0].EmailTags {
		n, v := aws.ToString(tag.Name), aws.ToString(tag.Value)
		if !valid.MatchString(n) || !valid.MatchString(v) {
			t.Errorf("tag %q=%q breaks SES's tag charset", n, v)
		}
		tags[n] = v
	}
	if tags[mail.DeliveryIDTag] != "d_unsub1" || tags[mail.TemplateTag] != "critique_v3" {
		t.Errorf("tags %v; want delivery_id=d_unsub1 and template=critique_v3", tags)
	}
}

// Without an unsubscribe URL no List-Unsubscribe header is sent (an empty
// one would be invalid), and the delivery id header still is.
func TestSender_NoUnsubscribeURLNoListUnsubscribeHeader(t *testing.T) {
	env := testenv.Stack(t)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	d := mail.SampleData()
	d.ChangelistID, d.UnsubscribeURL = testenv.Prefix(t), ""
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	id, err := sesmail.NewSender(env.Clients.SES, "criticizer@example.com", "").Send(context.Background(), "d_nounsub", "rcpt@example.com", m)
	if err != nil {
		t.Fatal(err)
	}
	e := storedEmail(t, env, id)
	for _, h := range e.Headers {
		if strings.HasPrefix(strings.ToLower(h.Name), "list-unsubscribe") {
			t.Errorf("header %s: %q sent without an unsubscribe URL", h.Name, h.Value)
		}
	}
	if e.Header(mail.DeliveryIDHeader) != "d_nounsub" {
		t.Errorf("delivery id header missing")
	}
}

// An unsubscribe URL that could break the header section (a line break, an
// angle bracket), is not an absolute http(s) URL or makes a header value
// over SES's 870 characters is a permanent bug: the message is not sent,
// and retrying would not help.
// Rules: R-LIMIT-2.
func TestSender_RejectsAnUnsafeUnsubscribeURL(t *testing.T) {
	s := sesmail.NewSender(nil, "criticizer@example.com", "") // never reaches SES
	for _, u := range []string{
		"https://x.example/u?t=1\r\nBcc: victim@example.com",
		"https://x.example/u?t=<1>",
		"https://x.example/u t",
		"mailto:unsubscribe@example.com",
		"/unsubscribe?token=1",
		"https://x.example/u/" + strings.Repeat("t", 870-len("<https://x.example/u/>")+1), // over SES's 870
	} {
		_, err := s.Send(context.Background(), "d_bad", "rcpt@example.com", delivery.Message{Subject: "s", HTML: "h", Text: "t", UnsubscribeURL: u})
		if err == nil {
			t.Errorf("unsubscribe URL %q accepted", u)
			continue
		}
		if c := retry.Classify(err); c.Class.Retryable() {
			t.Errorf("unsubscribe URL %q: error %v is retryable (%s)", u, err, c.Class)
		}
	}
}

// Tag values keep only SES's charset: ASCII letters, digits, '_' and '-',
// at most 256 characters.
func TestTagValue_OnlySESCharset(t *testing.T) {
	tests := map[string]string{
		"critique/v3":            "critique_v3",
		"d_abc-123":              "d_abc-123",
		"a b.c/é":                "a_b_c___", // é is two bytes
		"":                       "",
		strings.Repeat("x", 300): strings.Repeat("x", 256),
	}
	for in, want := range tests {
		if got := mail.TagValue(in); got != want {
			t.Errorf("TagValue(%q) = %q; want %q", in, got, want)
		}
	}
}

func storedEmail(t *testing.T, env testenv.Env, id string) devstack.StoredEmail {
	t.Helper()
	emails, err := env.SES.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range emails {
		if e.MessageID == id {
			return e
		}
	}
	t.Fatalf("message %s not in the SES store", id)
	return devstack.StoredEmail{}
}

// A message with a reply address is sent with it as its Reply-To (the
// emulator stores it as the message's replyTo), one without has none; an
// address SES would refuse is never sent.
// Rules: R-REPLY-1.
func TestSender_ReplyToIsTheDeliverysReplyAddress(t *testing.T) {
	env := testenv.Stack(t)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	d := mail.SampleData()
	d.ChangelistID = testenv.Prefix(t)
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	s := sesmail.NewSender(env.Clients.SES, "Criticizer <criticizer@example.com>", "")
	id, err := s.Send(context.Background(), "d_reply1", "rcpt@example.com", m)
	if err != nil {
		t.Fatal(err)
	}
	if e := storedEmail(t, env, id); len(e.ReplyTo) != 1 || e.ReplyTo[0] != d.ReplyTo {
		t.Errorf("Reply-To %q, want %q", e.ReplyTo, d.ReplyTo)
	}
	m.ReplyTo = ""
	if id, err = s.Send(context.Background(), "d_reply2", "rcpt@example.com", m); err != nil {
		t.Fatal(err)
	}
	if e := storedEmail(t, env, id); len(e.ReplyTo) != 0 {
		t.Errorf("Reply-To %q without a reply address", e.ReplyTo)
	}
	m.ReplyTo = "reply+" + strings.Repeat("k", 60) + "@replies.example.org"
	if _, err := s.Send(context.Background(), "d_reply3", "rcpt@example.com", m); retry.Classify(err).Class != retry.RuntimeBug {
		t.Errorf("a 66-octet local part: %v, want a RUNTIME_BUG refusal", err)
	}
}
