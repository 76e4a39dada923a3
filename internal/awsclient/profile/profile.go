// Package profile loads the AWS SDK configuration through the SDK's whole
// default chain — environment, shared config and credentials files,
// profiles, SSO, assume-role, IMDS — for tools an operator runs (the
// criticizer CLI) and for the local stack. Functions use
// awsclient.ForFunction, which does not link that chain.
package profile

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
)

// Load loads the AWS config through the default chain (region, credentials). Against
// emulators it supplies a region and static credentials when none are set,
// since the emulators accept any signature.
func Load(ctx context.Context, ep config.Endpoints, opts ...awsclient.Option) (aws.Config, error) {
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
	loadOpts = append(loadOpts, awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(awsclient.HTTPTimeout)))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg, nil
}
