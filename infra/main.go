// Command infra is Criticizer's AWS CDK app: `cdk synth` / `cdk deploy`
// from this directory (cdk.json runs `go run .`). See docs/deploy.md.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// StackName is the default stack (and queue-name prefix).
const StackName = "Criticizer"

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	if _, err := Build(app, StackName, &awscdk.StackProps{
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

// Build adds the stack to app with the cdk-nag AwsSolutions checks applied:
// an unsuppressed finding is an error annotation, which fails `cdk synth`
// and `cdk deploy`.
func Build(app awscdk.App, name string, props *awscdk.StackProps) (*Stack, error) {
	cfg, err := ConfigFromContext(app.Node())
	if err != nil {
		return nil, err
	}
	if err := checkAssets(cfg.AssetDir); err != nil {
		return nil, err
	}
	s := NewStack(app, name, props, cfg)
	if err := checkEnvironments(s); err != nil {
		return nil, err
	}
	applyNag(app)
	return s, nil
}

// checkAssets fails early, and says what to do, when a function's
// bootstrap has not been built.
func checkAssets(dir string) error {
	for _, f := range functionSpecs {
		p := filepath.Join(dir, f.Name, "bootstrap")
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return fmt.Errorf("no %s: run `make build` at the repository root first (or set -c %s=<dir holding <fn>/bootstrap>)", p, CtxAssetDir)
		}
	}
	return nil
}

func envOrNil(k string) *string {
	if v := os.Getenv(k); v != "" {
		return jsii.String(v)
	}
	return nil
}
