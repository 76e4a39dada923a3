// Command infra is Criticizer's AWS CDK app: `cdk synth` / `cdk deploy`
// from this directory (cdk.json runs `go run .`). See docs/deploy.md.
//
// It builds nothing of its own: it renders the deployment's description
// (internal/deploy, in the root module) with its context as the
// parameters' values (internal/deploy/cfn), includes that template, gives
// each function its code as an asset, and runs cdk-nag's AwsSolutions
// checks. template.yaml is the same rendering with the parameters left to
// CloudFormation.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/criticizer/criticizer/internal/deploy"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	if _, err := Build(app, deploy.StackName, &awscdk.StackProps{
		Env: &awscdk.Environment{
			Account: envOrNil("CDK_DEFAULT_ACCOUNT"),
			Region:  envOrNil("CDK_DEFAULT_REGION"),
		},
		Description: jsii.String("Criticizer: code-review webhooks to critique emails"),
	}); err != nil {
		fmt.Fprintln(os.Stderr, "criticizer infra:", err)
		os.Exit(1)
	}
	app.Synth(nil)
}

func envOrNil(k string) *string {
	if v := os.Getenv(k); v != "" {
		return jsii.String(v)
	}
	return nil
}
