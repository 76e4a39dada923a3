// Command intake is the API function: webhook intake, GET /jobs/{id} and
// GET /healthz behind API Gateway (HTTP API, payload format 2.0).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	lambda.Start(lambdamain.Handler(context.Background(), "intake"))
}
