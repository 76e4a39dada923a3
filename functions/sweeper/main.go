// Command sweeper runs on an EventBridge schedule: it re-enqueues stuck
// jobs, hands deliveries stuck in `sending` back to notify for
// reconciliation, and flags rows marked sent without provider evidence.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "sweeper"))
}
