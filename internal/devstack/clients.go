package devstack

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/store/dynamo"
)

// Clients is one client of every service the local stack emulates, for
// provisioning, tests and local tools. Functions build only their own
// (internal/wire).
type Clients struct {
	Config   aws.Config
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	SES      *sesv2.Client
	S3       *s3.Client
	SNS      *sns.Client
}

// NewClients builds the clients against the endpoints.
func NewClients(ctx context.Context, ep config.Endpoints, opts ...awsclient.Option) (*Clients, error) {
	cfg, err := profile.Load(ctx, ep, opts...)
	if err != nil {
		return nil, err
	}
	return &Clients{
		Config:   cfg,
		DynamoDB: dynamo.NewClient(cfg, ep.DynamoDB),
		SQS:      queue.NewSQS(cfg, ep.SQS),
		SES:      sesmail.NewSES(cfg, ep.SES),
		S3:       blob.NewS3(cfg, ep.S3),
		SNS: sns.NewFromConfig(cfg, func(o *sns.Options) {
			if ep.SQS != "" {
				// fauxqs serves SNS on the SQS port.
				o.BaseEndpoint = aws.String(ep.SQS)
			}
		}),
	}, nil
}
