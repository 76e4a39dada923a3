package awsclient

import (
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/criticizer/criticizer/internal/config"
)

// ForFunction is the SDK config of a Lambda function: the region and the
// execution role's credentials from the environment Lambda sets
// (AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN) — exactly what the SDK's default chain finds first in
// Lambda. It does not link that chain (shared config files, SSO, STS
// assume-role, IMDS), which a function never uses and which is about 2 MB
// of every bootstrap. Against the local emulators, missing values default
// to us-east-1 and static credentials. Tools use Load.
func ForFunction(ep config.Endpoints, opts ...Option) aws.Config {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if ep.Local() {
		if region == "" {
			region = "us-east-1"
		}
		if key == "" {
			key, secret = "local", "local"
		}
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN"))),
		HTTPClient:  awshttp.NewBuildableClient().WithTimeout(HTTPTimeout),
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}
