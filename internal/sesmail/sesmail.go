// Package sesmail sends rendered messages through SES v2: the delivery id
// header and tag, the one-click unsubscribe headers, evidence probes. It is
// the only package that links the SES client.
package sesmail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/retry"
)

// checkUnsubscribeURL accepts an absolute http(s) URL that can sit between
// the angle brackets of a List-Unsubscribe header: printable ASCII, no
// spaces, no angle brackets (RFC 8058 §3.1 requires HTTPS in production;
// http is accepted for the local stack).
func checkUnsubscribeURL(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' {
			return fmt.Errorf("unsubscribe URL has a byte 0x%02x not allowed in a header", c)
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("unsubscribe URL is not an absolute http(s) URL")
	}
	// Config bounds the public URL so this never happens (R-LIMIT-2); a
	// longer value would have SES refuse the whole send.
	if n := len("<") + len(s) + len(">"); n > config.MaxSESHeaderValue {
		return fmt.Errorf("unsubscribe URL makes a %d-character List-Unsubscribe value, over SES's %d", n, config.MaxSESHeaderValue)
	}
	return nil
}

// checkReplyTo accepts a bare ASCII address with a local part of at most
// 64 octets (RFC 5321 §4.5.3.1.1): a reply address.
func checkReplyTo(s string) error {
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at > 64 || at == len(s)-1 {
		return errors.New("reply-to address is not local@domain with a local part of at most 64 octets")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == ',' || c == '"' {
			return fmt.Errorf("reply-to address has a byte 0x%02x", c)
		}
	}
	return nil
}

// DefaultSendTimeout bounds one SendEmail call. Without it a hung
// connection would hold the claim until the invocation dies; with it the
// call fails as a timeout, and the row is held for provider evidence.
const DefaultSendTimeout = 10 * time.Second

// NewSES returns the SES v2 client the sender needs: at endpoint when set
// (the local emulator), and making exactly one attempt per call —
// SendEmail is not idempotent, and an SDK retry of a send whose answer was
// lost would send the message twice (awsclient/retry.go).
func NewSES(cfg aws.Config, endpoint string) *sesv2.Client {
	return sesv2.NewFromConfig(cfg, func(o *sesv2.Options) {
		o.RetryMaxAttempts = awsclient.SDKAttemptsSES
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// Sender sends rendered messages through SES v2.
//
// SendEmail is not idempotent (SES has no idempotency key), so the client
// must not retry it: build it with RetryMaxAttempts 1 (awsclient does). A
// send whose answer is lost is settled by the outbox from provider
// evidence, never resent blindly.
type Sender struct {
	ses              *sesv2.Client
	from             string
	configurationSet string
	// Timeout bounds each SendEmail call (DefaultSendTimeout if zero).
	Timeout time.Duration
	// ProbeAddress receives evidence probes (mail.DefaultProbeAddress if empty).
	ProbeAddress string
	// Account, if set, is told of every send SES accepts and of SES
	// refusing one over the daily quota, which pauses sending (R-RATE-3).
	Account *Account
}

// NewSender returns an SES v2 sender. configurationSet may be empty.
func NewSender(c *sesv2.Client, from, configurationSet string) *Sender {
	return &Sender{ses: c, from: from, configurationSet: configurationSet}
}

// SendProbe sends an evidence probe: a short message to the probe address
// through the configuration set, tagged (and headed) with id. Its events
// move the feedback function's watermark, so a send whose answer was lost
// can be settled even when no other mail flows (store.Evidence).
func (s *Sender) SendProbe(ctx context.Context, id string) (string, error) {
	to := s.ProbeAddress
	if to == "" {
		to = mail.DefaultProbeAddress
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String("Criticizer evidence probe " + id), Charset: aws.String("UTF-8")},
			Body:    &types.Body{Text: &types.Content{Data: aws.String("An evidence probe: its SES events show how far the event path has caught up.\n"), Charset: aws.String("UTF-8")}},
			Headers: []types.MessageHeader{{Name: aws.String(mail.ProbeHeader), Value: aws.String(id)}},
		}},
		EmailTags: []types.MessageTag{{Name: aws.String(mail.ProbeTag), Value: aws.String(mail.TagValue(id))}},
	}
	return s.send(ctx, "probe "+id, in)
}

func (s *Sender) send(ctx context.Context, what string, in *sesv2.SendEmailInput) (string, error) {
	if s.configurationSet != "" {
		in.ConfigurationSetName = aws.String(s.configurationSet)
	}
	d := s.Timeout
	if d <= 0 {
		d = DefaultSendTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := s.ses.SendEmail(ctx, in)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		// No connection was made: the request never left, nothing was sent.
		return "", &delivery.NotSentError{Err: fmt.Errorf("ses send %s: %w", what, err)}
	}
	if err != nil && IsDailyQuota(err) {
		// An answer, and nothing was sent: the account's daily quota is
		// spent. Not a rate throttle: sending pauses until the rolling
		// window has room (R-RATE-3).
		s.Account.Spent(ctx)
		return "", retry.WithRetryAfter(retry.Transient(retry.QuotaExhausted, fmt.Errorf("ses send %s: %w", what, err)), s.Account.recheck())
	}
	if err != nil {
		return "", fmt.Errorf("ses send %s: %w", what, err)
	}
	s.Account.Sent()
	return aws.ToString(out.MessageId), nil
}

// Send sends one message to one recipient and returns SES's message id.
// Every message carries the delivery id (header and tag) and the template
// tag; one with an unsubscribe URL also carries the one-click unsubscribe
// headers.
func (s *Sender) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	headers := []types.MessageHeader{{Name: aws.String(mail.DeliveryIDHeader), Value: aws.String(deliveryID)}}
	if m.UnsubscribeURL != "" {
		if err := checkUnsubscribeURL(m.UnsubscribeURL); err != nil {
			// The URL is Criticizer's own: a bad one is a bug, and sending
			// it in a header could break the header section.
			return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("ses send %s: %w", deliveryID, err))
		}
		headers = append(headers,
			types.MessageHeader{Name: aws.String(mail.ListUnsubscribeHeader), Value: aws.String("<" + m.UnsubscribeURL + ">")},
			types.MessageHeader{Name: aws.String(mail.ListUnsubscribePostHeader), Value: aws.String(mail.ListUnsubscribePostValue)})
	}
	for _, h := range mail.FilingHeaders(m) {
		headers = append(headers, types.MessageHeader{Name: aws.String(h.Name), Value: aws.String(h.Value)})
	}
	if err := checkHeaders(headers); err != nil {
		// The values are Criticizer's own, rendered with the message: one
		// SES would refuse is a bug, and SES would refuse the whole send.
		return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("ses send %s: %w", deliveryID, err))
	}
	tags := []types.MessageTag{{Name: aws.String(mail.DeliveryIDTag), Value: aws.String(deliveryID)}}
	if m.TemplateVersion != "" {
		tags = append(tags, types.MessageTag{Name: aws.String(mail.TemplateTag), Value: aws.String(mail.TagValue(m.TemplateVersion))})
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Subject), Charset: aws.String("UTF-8")},
			Body: &types.Body{
				Html: &types.Content{Data: aws.String(m.HTML), Charset: aws.String("UTF-8")},
				Text: &types.Content{Data: aws.String(m.Text), Charset: aws.String("UTF-8")},
			},
			Headers: headers,
		}},
		EmailTags: tags,
	}
	if m.ReplyTo != "" {
		// The delivery's reply address (R-REPLY-1), Criticizer's own:
		// one SES would refuse is a bug.
		if err := checkReplyTo(m.ReplyTo); err != nil {
			return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("ses send %s: %w", deliveryID, err))
		}
		in.ReplyToAddresses = []string{m.ReplyTo}
	}
	return s.send(ctx, deliveryID, in)
}
