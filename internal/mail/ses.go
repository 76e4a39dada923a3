package mail

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// DeliveryIDHeader carries the delivery id in every email, so a reply, a
// bounce or a complaint can be traced to its outbox row.
const DeliveryIDHeader = "X-Criticizer-Delivery-Id"

// DeliveryIDTag is the SES message tag with the delivery id. SES has no
// idempotency key; event publishing echoes tags, which is how the feedback
// function matches provider evidence to the row (seed 000 §6.4, §8.2).
const DeliveryIDTag = "delivery_id"

// Sender sends rendered messages through SES v2.
type Sender struct {
	ses              *sesv2.Client
	from             string
	configurationSet string
}

// NewSender returns an SES v2 sender. configurationSet may be empty.
func NewSender(c *sesv2.Client, from, configurationSet string) *Sender {
	return &Sender{ses: c, from: from, configurationSet: configurationSet}
}

// Send sends one message to one recipient and returns SES's message id.
func (s *Sender) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Subject), Charset: aws.String("UTF-8")},
			Body: &types.Body{
				Html: &types.Content{Data: aws.String(m.HTML), Charset: aws.String("UTF-8")},
				Text: &types.Content{Data: aws.String(m.Text), Charset: aws.String("UTF-8")},
			},
			Headers: []types.MessageHeader{{Name: aws.String(DeliveryIDHeader), Value: aws.String(deliveryID)}},
		}},
		EmailTags: []types.MessageTag{{Name: aws.String(DeliveryIDTag), Value: aws.String(deliveryID)}},
	}
	if s.configurationSet != "" {
		in.ConfigurationSetName = aws.String(s.configurationSet)
	}
	out, err := s.ses.SendEmail(ctx, in)
	if err != nil {
		return "", fmt.Errorf("ses send %s: %w", deliveryID, err)
	}
	return aws.ToString(out.MessageId), nil
}
