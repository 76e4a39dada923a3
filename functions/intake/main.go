// Command intake is the intake function: the HTTP API behind API Gateway (webhooks, job status, unsubscribe, admin).
// It builds only what it uses (internal/wire/intake) and hands Lambda a
// typed handler.
package main

import (
	"context"
	// The preference page validates IANA time zones (R-PREF-1): the zone
	// database is linked in, since a Lambda runtime image need not ship
	// one (about 450 KB).
	_ "time/tzdata"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/intake"
)

func main() {
	ctx := context.Background()
	cfg, log := wire.FromEnv("intake")
	fn, err := intake.New(ctx, cfg, log, wire.Options{})
	if err != nil {
		wire.Fail(log, err)
	}
	lambda.Start(fn.Handle)
}
