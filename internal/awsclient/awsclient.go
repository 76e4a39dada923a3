// Package awsclient loads the AWS SDK configuration every function and tool
// starts from: region and credentials (static ones against the local
// emulators), an HTTP client with a timeout, and options such as fault
// injection. It builds no service client: each adapter package builds its
// own (store.NewDynamoDB, queue.NewSQS, blob.NewS3, sesmail.NewSES), so a
// function links only the services it calls. Who retries which operation
// is in retry.go.
package awsclient

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/criticizer/criticizer/internal/config"
)

// HTTPTimeout bounds every AWS call's HTTP exchange.
const HTTPTimeout = 30 * time.Second

// Option adjusts the SDK config, e.g. to add fault-injection middleware.
type Option func(*aws.Config)

// Load loads the default AWS config (region, credentials). Against
// emulators it supplies a region and static credentials when none are set,
// since the emulators accept any signature.
func Load(ctx context.Context, ep config.Endpoints, opts ...Option) (aws.Config, error) {
	var loadOpts []func(*awsconfig.LoadOptions) error
	if ep.Local() {
		if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
			loadOpts = append(loadOpts, awsconfig.WithRegion("us-east-1"))
		}
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
		}
	}
	// Every call has an end: the SDK's default client waits for an answer
	// without limit. 30 s leaves room for SQS long polls (20 s). A call
	// that needs less sets its own deadline (an SES send, see sesmail).
	loadOpts = append(loadOpts, awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(HTTPTimeout)))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg, nil
}
