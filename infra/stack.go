package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/cloudformationinclude"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// CtxAssetDir is the directory holding <fn>/bootstrap for every function.
const CtxAssetDir = deploy.ContextAssetDir

// Config is what the stack is built from: the parameters' values, by
// parameter name, from the context keys that set them.
type Config struct {
	AssetDir string
	Values   map[string]string
}

// ConfigFromContext reads every parameter of the description from its
// context key (deploy.Param.ContextKey); a key not given takes the
// parameter's default. The values are checked when the template is
// rendered (cfn.CDK), with template.yaml's constraints.
func ConfigFromContext(node constructs.Node, d deploy.Deployment) Config {
	get := func(k string) (string, bool) {
		v, ok := node.TryGetContext(jsii.String(k)).(string)
		if !ok {
			if n, isNum := node.TryGetContext(jsii.String(k)).(float64); isNum {
				return fmt.Sprint(n), true
			}
		}
		return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
	}
	c := Config{AssetDir: filepath.Join("..", "build"), Values: map[string]string{}}
	if v, ok := get(CtxAssetDir); ok {
		c.AssetDir = v
	}
	for _, p := range d.Parameters {
		if p.SAMOnly {
			continue
		}
		if v, ok := get(p.ContextKey()); ok {
			c.Values[p.Name] = v
		}
	}
	return c
}

// Stack is the built stack and what the tests look at.
type Stack struct {
	Stack   awscdk.Stack
	Include cloudformationinclude.CfnInclude
	// Template is the rendering the stack includes.
	Template *cfn.Template
}

// Build adds the stack to app: the description rendered with the context's
// values, refused when a value breaks its parameter's constraints or a
// function's environment could pass Lambda's 4 KB (R-LIMIT-1); then
// cdk-nag's AwsSolutions checks, whose unsuppressed findings are error
// annotations that fail `cdk synth` and `cdk deploy`.
func Build(app awscdk.App, name string, props *awscdk.StackProps) (*Stack, error) {
	d := deploy.Describe()
	cfg := ConfigFromContext(app.Node(), d)
	if err := checkAssets(cfg.AssetDir, d); err != nil {
		return nil, err
	}
	tpl, err := cfn.CDK(d, cfg.Values)
	if err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	sizes, err := cfn.EnvironmentSizes(tpl, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("sizing the functions' environments: %w", err)
	}
	if err := cfn.CheckEnvironments(sizes); err != nil {
		return nil, err
	}
	st := awscdk.NewStack(app, jsii.String(name), props)
	s, err := include(st, tpl)
	if err != nil {
		return nil, err
	}
	for _, f := range d.Functions {
		asset := awss3assets.NewAsset(st, jsii.String(deploy.FunctionID(f.Name)+"Code"), &awss3assets.AssetProps{
			Path: jsii.String(filepath.Join(cfg.AssetDir, f.Name))})
		fn := s.Include.GetResource(jsii.String(deploy.FunctionID(f.Name)))
		fn.AddPropertyOverride(jsii.String("Code.S3Bucket"), asset.S3BucketName())
		fn.AddPropertyOverride(jsii.String("Code.S3Key"), asset.S3ObjectKey())
	}
	if from, ok := cfg.Values["MailFrom"]; !ok || from == deploy.DefaultMailFrom {
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("criticizer:mailFrom"),
			jsii.String("mailFrom is the placeholder "+deploy.DefaultMailFrom+"; deploy with -c mailFrom='Name <address@your-verified-domain>'"))
	}
	applyNagSuppressions(s, d, cfg)
	applyNag(app)
	return s, nil
}

// include adds the rendered template to the stack, every resource as the
// CDK's own L1 construct (so cdk-nag's rules see them).
func include(st awscdk.Stack, tpl *cfn.Template) (*Stack, error) {
	b, err := json.Marshal(tpl)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "criticizer-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	inc := cloudformationinclude.NewCfnInclude(st, jsii.String("Template"), &cloudformationinclude.CfnIncludeProps{
		TemplateFile: jsii.String(path)})
	return &Stack{Stack: st, Include: inc, Template: tpl}, nil
}

// checkAssets fails early, and says what to do, when a function's
// bootstrap has not been built.
func checkAssets(dir string, d deploy.Deployment) error {
	for _, f := range d.Functions {
		p := filepath.Join(dir, f.Name, "bootstrap")
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return fmt.Errorf("no %s: run `make build` at the repository root first (or set -c %s=<dir holding <fn>/bootstrap>)", p, CtxAssetDir)
		}
	}
	return nil
}
