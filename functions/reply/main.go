// Command reply acts on replies to Criticizer's emails (SES receipt rule
// → S3 and SNS → SQS): "wrong 3", "useful 2", "mute", "unsubscribe",
// "help", each answered by a confirmation notify sends.
// It builds only what it uses (internal/wire/reply) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/reply"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("reply")
	fn, err := reply.New(ctx, cfg, log, wire.Options{})
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
