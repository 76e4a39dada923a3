// Command fetch is the fetch stage: an SQS-triggered function that fetches the changelist diff (inline or diff_url) into the payload bucket.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "fetch"))
}
