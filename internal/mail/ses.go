package mail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/retry"
)

// DeliveryIDHeader carries the delivery id in every email, so a reply, a
// bounce or a complaint can be traced to its outbox row.
const DeliveryIDHeader = "X-Criticizer-Delivery-Id"

// DeliveryIDTag is the SES message tag with the delivery id. SES has no
// idempotency key; event publishing echoes tags, which is how the feedback
// function matches provider evidence to the row (seed 000 §6.4, §8.2).
const DeliveryIDTag = "delivery_id"

// TemplateTag is the SES message tag naming the template version the
// message was rendered with (e.g. "critique_v2"), so sending events can be
// told apart by layout.
const TemplateTag = "template"

// The RFC 8058 one-click unsubscribe headers, sent with every message that
// has an unsubscribe URL. Mailbox providers show their own unsubscribe
// button for them and POST "List-Unsubscribe=One-Click" to the URL.
const (
	ListUnsubscribeHeader     = "List-Unsubscribe"
	ListUnsubscribePostHeader = "List-Unsubscribe-Post"
	ListUnsubscribePostValue  = "List-Unsubscribe=One-Click"
)

// TagValue makes s a valid SES message tag value: SES accepts only ASCII
// letters, digits, '_' and '-', at most 256 characters; anything else
// becomes '_' ("critique/v2" -> "critique_v2").
func TagValue(s string) string {
	b := []byte(s)
	if len(b) > 256 {
		b = b[:256]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

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
	return nil
}

// ProbeTag is the SES message tag that marks an evidence probe, and
// ProbeHeader the header that carries it too (the local SES emulator keeps
// headers, not tags). Its value is the probe's id.
const (
	ProbeTag    = "criticizer_probe"
	ProbeHeader = "X-Criticizer-Probe"
)

// DefaultProbeAddress is SES's mailbox simulator address that accepts every
// message: a probe sent there produces the Send and Delivery events of any
// message, costs what any message costs, and reaches nobody.
const DefaultProbeAddress = "success@simulator.amazonses.com"

// DefaultSendTimeout bounds one SendEmail call. Without it a hung
// connection would hold the claim until the invocation dies; with it the
// call fails as a timeout, and the row is held for provider evidence.
const DefaultSendTimeout = 10 * time.Second

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
	// ProbeAddress receives evidence probes (DefaultProbeAddress if empty).
	ProbeAddress string
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
		to = DefaultProbeAddress
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String("Criticizer evidence probe " + id), Charset: aws.String("UTF-8")},
			Body:    &types.Body{Text: &types.Content{Data: aws.String("An evidence probe: its SES events show how far the event path has caught up.\n"), Charset: aws.String("UTF-8")}},
			Headers: []types.MessageHeader{{Name: aws.String(ProbeHeader), Value: aws.String(id)}},
		}},
		EmailTags: []types.MessageTag{{Name: aws.String(ProbeTag), Value: aws.String(TagValue(id))}},
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
	if err != nil {
		return "", fmt.Errorf("ses send %s: %w", what, err)
	}
	return aws.ToString(out.MessageId), nil
}

// Send sends one message to one recipient and returns SES's message id.
// Every message carries the delivery id (header and tag) and the template
// tag; one with an unsubscribe URL also carries the one-click unsubscribe
// headers.
func (s *Sender) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	headers := []types.MessageHeader{{Name: aws.String(DeliveryIDHeader), Value: aws.String(deliveryID)}}
	if m.UnsubscribeURL != "" {
		if err := checkUnsubscribeURL(m.UnsubscribeURL); err != nil {
			// The URL is Criticizer's own: a bad one is a bug, and sending
			// it in a header could break the header section.
			return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("ses send %s: %w", deliveryID, err))
		}
		headers = append(headers,
			types.MessageHeader{Name: aws.String(ListUnsubscribeHeader), Value: aws.String("<" + m.UnsubscribeURL + ">")},
			types.MessageHeader{Name: aws.String(ListUnsubscribePostHeader), Value: aws.String(ListUnsubscribePostValue)})
	}
	tags := []types.MessageTag{{Name: aws.String(DeliveryIDTag), Value: aws.String(deliveryID)}}
	if m.TemplateVersion != "" {
		tags = append(tags, types.MessageTag{Name: aws.String(TemplateTag), Value: aws.String(TagValue(m.TemplateVersion))})
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
	return s.send(ctx, deliveryID, in)
}
