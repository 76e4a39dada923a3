// Command notify is the notify stage: an SQS-triggered function that mails the critique to each reviewer through the outbox (send, then mark).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "notify"))
}
