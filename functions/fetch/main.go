// Command fetch is the fetch stage: an SQS-triggered function that fetches the changelist diff (inline or diff_url) into the payload bucket.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/lambdamain"
)

func main() {
	a, log := lambdamain.Init(context.Background(), "fetch")
	fn := lambdamain.Must(a.StageFunc(job.StageFetch))(log)
	lambda.Start(a.Runner(job.StageFetch, fn).Handle)
}
