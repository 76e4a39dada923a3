// Command fetch is the fetch stage: an SQS-triggered function that reads each changelist's diff and reviewers into S3.
// It builds only what it uses (internal/wire/fetch) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/fetch"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("fetch")
	fn, err := fetch.New(ctx, cfg, log, wire.Options{})
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
