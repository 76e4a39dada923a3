// Command sweeper runs on an EventBridge schedule: it re-enqueues stuck
// jobs, hands deliveries stuck in `sending` back to notify for
// reconciliation, and flags rows marked sent without provider evidence.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
	"github.com/criticizer/criticizer/internal/sweeper"
)

func main() {
	a, _ := lambdamain.Init(context.Background(), "sweeper")
	s := a.Sweeper()
	lambda.Start(func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.Report, error) {
		return s.Run(ctx)
	})
}
