// Package awsclient builds the AWS SDK clients every function uses, from an
// explicit Endpoints value rather than hidden process state, so tests and the
// local stack point the same code at the emulators.
package awsclient

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Endpoints overrides service endpoints; empty fields use AWS's own. The
// variables are the SDK's standard ones (AWS_ENDPOINT_URL_<SERVICE>), read
// here once so the override is visible in one place.
type Endpoints struct {
	DynamoDB string
	SQS      string
	SES      string
	S3       string
}

// EndpointsFromEnv reads the SDK's standard endpoint variables, with
// AWS_ENDPOINT_URL as the fallback for each service.
func EndpointsFromEnv(getenv func(string) string) Endpoints {
	all := getenv("AWS_ENDPOINT_URL")
	pick := func(name string) string {
		if v := getenv("AWS_ENDPOINT_URL_" + name); v != "" {
			return v
		}
		return all
	}
	return Endpoints{DynamoDB: pick("DYNAMODB"), SQS: pick("SQS"), SES: pick("SESV2"), S3: pick("S3")}
}

// Local reports whether any endpoint is overridden, i.e. we talk to emulators.
func (e Endpoints) Local() bool {
	return e.DynamoDB != "" || e.SQS != "" || e.SES != "" || e.S3 != ""
}

// Clients holds one client per service.
type Clients struct {
	Config   aws.Config
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	SES      *sesv2.Client
	S3       *s3.Client
	SNS      *sns.Client
}

// HTTPTimeout bounds every AWS call's HTTP exchange.
const HTTPTimeout = 30 * time.Second

// Option adjusts the SDK config, e.g. to add fault-injection middleware.
type Option func(*aws.Config)

// New loads the default AWS config (region, credentials) and builds the
// clients. Against emulators it supplies static credentials when none are
// set, since the emulators accept any signature.
func New(ctx context.Context, ep Endpoints, opts ...Option) (*Clients, error) {
	var loadOpts []func(*config.LoadOptions) error
	if ep.Local() {
		if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
			loadOpts = append(loadOpts, config.WithRegion("us-east-1"))
		}
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
		}
	}
	// Every call has an end: the SDK's default client waits for an answer
	// without limit. 30 s leaves room for SQS long polls (20 s). A call
	// that needs less sets its own deadline (an SES send, see mail.Sender).
	loadOpts = append(loadOpts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(HTTPTimeout)))
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &Clients{
		Config: cfg,
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if ep.DynamoDB != "" {
				o.BaseEndpoint = aws.String(ep.DynamoDB)
				// DynamoDB Local's error responses carry no CRC32 header.
				o.DisableValidateResponseChecksum = true
			}
		}),
		SQS: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if ep.SQS != "" {
				o.BaseEndpoint = aws.String(ep.SQS)
			}
		}),
		SES: sesv2.NewFromConfig(cfg, func(o *sesv2.Options) {
			// SendEmail is not idempotent: never resent by the SDK.
			o.RetryMaxAttempts = SDKAttemptsSES
			if ep.SES != "" {
				o.BaseEndpoint = aws.String(ep.SES)
			}
		}),
		SNS: sns.NewFromConfig(cfg, func(o *sns.Options) {
			if ep.SQS != "" {
				// fauxqs serves SNS on the SQS port.
				o.BaseEndpoint = aws.String(ep.SQS)
			}
		}),
		S3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			if ep.S3 != "" {
				o.BaseEndpoint = aws.String(ep.S3)
				o.UsePathStyle = true
			}
		}),
	}, nil
}
