// Package awsclient makes the AWS SDK configuration a function starts from
// (ForFunction): region and credentials from Lambda's environment (static
// ones against the local emulators), an HTTP client with a timeout, and
// options such as fault injection. It builds no service client: each
// adapter package builds its own (dynamo.NewClient, queue.NewSQS,
// blob.NewS3, sesmail.NewSES), so a function links only the services it
// calls. Tools that need the SDK's whole credential chain (profiles, SSO)
// use awsclient/profile. Who retries which operation is in retry.go.
package awsclient

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// HTTPTimeout bounds every AWS call's HTTP exchange.
const HTTPTimeout = 30 * time.Second

// Option adjusts the SDK config, e.g. to add fault-injection middleware.
type Option func(*aws.Config)
