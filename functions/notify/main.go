// Command notify is the notify stage: an SQS-triggered function that mails the critique to each reviewer through the outbox (send, then mark).
// It builds only what it uses (internal/wire/notify) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/notify"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("notify")
	fn, err := notify.New(ctx, cfg, log, wire.Options{}, nil)
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
