// Command llm is the llm stage: an SQS-triggered function that has the critic review the diff and stores the critique.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "llm"))
}
