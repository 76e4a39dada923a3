package mail_test

import (
	"context"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Adapter test against the SES v2 emulator: the sender delivers the rendered
// message with the delivery id header (the provider idempotency token of
// seed 000 §6.4 step 1) and returns SES's message id.
func TestSender_SendsRenderedMessageWithDeliveryIDHeader_000_6_4(t *testing.T) {
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
	s := mail.NewSender(env.Clients.SES, "Criticizer <criticizer@example.com>", "")
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
