// Command feedback records SES events (configuration set → SNS → SQS) on the delivery rows they name, as provider evidence.
// It builds only what it uses (internal/wire/feedback) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/feedback"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("feedback")
	fn, err := feedback.New(ctx, cfg, log, wire.Options{})
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
