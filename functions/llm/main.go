// Command llm is the llm stage: an SQS-triggered function that has the configured critic review the diff.
// It builds only what it uses (internal/wire/llm) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/llm"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("llm")
	fn, err := llm.New(ctx, cfg, log, wire.Options{}, nil)
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
