// Command sweeper is the scheduled safety net: stuck jobs, rows stuck in sending, sent rows SES never confirmed.
// It builds only what it uses (internal/wire/sweeper) and hands Lambda a
// typed handler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/sweeper"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("sweeper")
	fn, err := sweeper.New(ctx, cfg, log, wire.Options{})
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(sweeper.Handler(fn))
}
