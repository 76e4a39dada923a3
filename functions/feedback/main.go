// Command feedback consumes SES event publishing (configuration set → SNS →
// SQS) and records Send, Delivery, Bounce, Complaint and Reject events on
// the delivery rows they name: the provider evidence reconciliation needs.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "feedback"))
}
