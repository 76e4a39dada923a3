package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// buildWith synthesizes the stack with extra context and returns the
// template as JSON text, or the Build error.
func buildWith(t *testing.T, ctx map[string]any) (string, error) {
	t.Helper()
	dir := t.TempDir()
	assets := filepath.Join(dir, "assets")
	if err := dummyAssets(assets); err != nil {
		t.Fatal(err)
	}
	c := map[string]any{CtxAssetDir: assets, CtxMailFrom: testMailFrom}
	for k, v := range ctx {
		c[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out")), Context: &c})
	st, err := Build(app, StackName+"Critic", nil)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(assertions.Template_FromStack(st.Stack, nil).ToJSON())
	return string(b), err
}

// The llm stage's critic is chosen at deploy time; with Bedrock, only llm
// may invoke the chosen model, and the OpenAI key never rides in context.
func TestCriticContext_BedrockGrantsOnlyLLMTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("second synth")
	}
	tmpl, err := buildWith(t, map[string]any{CtxCritic: "bedrock", CtxCriticModel: "anthropic.claude-3-5-sonnet-20240620-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(tmpl), &doc); err != nil {
		t.Fatal(err)
	}
	env, _ := get(doc.Resources[FunctionID(FnLLM)].Properties, "Environment", "Variables").(map[string]any)
	if env[EnvCritic] != "bedrock" || env[EnvBedrockModelID] != "anthropic.claude-3-5-sonnet-20240620-v1:0" {
		t.Fatalf("llm env %v: want the bedrock critic and model", env)
	}
	holders := 0
	for id, r := range doc.Resources {
		if r.Type != "AWS::IAM::Policy" {
			continue
		}
		b, _ := json.Marshal(r.Properties)
		if !strings.Contains(string(b), "bedrock:InvokeModel") {
			continue
		}
		holders++
		if !strings.Contains(id, "Llm") || !strings.Contains(string(b), "foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0") {
			t.Errorf("%s grants bedrock:InvokeModel: %s", id, b)
		}
	}
	if holders != 1 {
		t.Errorf("%d policies grant bedrock:InvokeModel, want llm's only", holders)
	}
	if _, err := buildWith(t, map[string]any{CtxCritic: "openai"}); err == nil || !strings.Contains(err.Error(), CtxCriticModel) {
		t.Errorf("critic=openai without a model: %v, want an error naming %s", err, CtxCriticModel)
	}
}
