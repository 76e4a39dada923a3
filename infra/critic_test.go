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
	c, err := cdkJSONContext()
	if err != nil {
		t.Fatal(err)
	}
	c[CtxAssetDir], c[CtxMailFrom] = assets, testMailFrom
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

// bedrockStatements is the llm role's bedrock:InvokeModel statements,
// rendered (partition and region as ${AWS::Partition}, ${AWS::Region}).
func bedrockStatements(t *testing.T, model string) []map[string]any {
	t.Helper()
	tmpl, err := buildWith(t, map[string]any{CtxCritic: "bedrock", CtxCriticModel: model})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(tmpl), &doc); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range resourcesOf(doc) {
		if r["Type"] != "AWS::IAM::Policy" {
			continue
		}
		for _, st := range get(props(r), "PolicyDocument", "Statement").([]any) {
			if strings.Contains(render(get(st, "Action")), "bedrock:") {
				out = append(out, st.(map[string]any))
			}
		}
	}
	return out
}

// Current Anthropic models on Bedrock are invoked through inference
// profiles: the grant names the profile in the stack's region and the
// foundation model in any region the profile routes to, in the stack's
// partition; a foundation model id is granted in the stack's region; an
// application inference profile ARN is granted, with the models it routes
// to only through it. A malformed id fails synth.
func TestBedrockGrants_ModelsProfilesAndARNs(t *testing.T) {
	if testing.Short() {
		t.Skip("more synths")
	}
	for _, tc := range []struct {
		model      string
		want       []string
		conditions string
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0"}, ""},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"}, ""},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0"}, ""},
		{"arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123", []string{
			"arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/*"},
			`{"StringEquals":{"bedrock:InferenceProfileArn":"arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123"}}`},
	} {
		sts := bedrockStatements(t, tc.model)
		var got []string
		conds := ""
		for _, st := range sts {
			if a := render(get(st, "Action")); a != "bedrock:InvokeModel" {
				t.Errorf("%s: action %s", tc.model, a)
			}
			for _, r := range anyList(get(st, "Resource")) {
				got = append(got, render(r))
			}
			if c := get(st, "Condition"); c != nil {
				b, _ := json.Marshal(c)
				conds = string(b)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: resources\n got  %v\n want %v", tc.model, got, tc.want)
		}
		if conds != tc.conditions {
			t.Errorf("%s: condition %s, want %s", tc.model, conds, tc.conditions)
		}
		if strings.Contains(strings.Join(got, " "), "arn:aws:bedrock:*") {
			t.Errorf("%s: a literal partition", tc.model)
		}
	}
	if _, err := buildWith(t, map[string]any{CtxCritic: "bedrock", CtxCriticModel: "claude sonnet"}); err == nil || !strings.Contains(err.Error(), "not a Bedrock model id") {
		t.Errorf("a malformed model id: %v", err)
	}
}

func anyList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// Reserving notify's concurrency is opt-in, and never below its event
// source's maximum concurrency.
func TestNotifyReservedConcurrency_OptIn(t *testing.T) {
	if testing.Short() {
		t.Skip("more synths")
	}
	tmpl, err := buildWith(t, map[string]any{CtxNotifyReserved: "5"})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(tmpl), &doc); err != nil {
		t.Fatal(err)
	}
	if got := num(get(props(resourcesOf(doc)[FunctionID(FnNotify)]), "ReservedConcurrentExecutions")); got != 5 {
		t.Errorf("notify reserved %v, want 5", got)
	}
	if _, err := buildWith(t, map[string]any{CtxNotifyReserved: "2"}); err == nil || !strings.Contains(err.Error(), CtxNotifyReserved) {
		t.Errorf("a reservation below the event source's concurrency: %v", err)
	}
}
