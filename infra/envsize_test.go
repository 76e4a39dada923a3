package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// buildStack builds the stack (Build, without synthesizing it) with
// cdk.json's context and extra values, over dummy assets.
func buildStack(t *testing.T, extra map[string]any) (*Stack, error) {
	t.Helper()
	synth(t) // the jsii runtime up
	dir := t.TempDir()
	assets := filepath.Join(dir, "assets")
	if err := dummyAssets(assets); err != nil {
		t.Fatal(err)
	}
	ctx, err := cdkJSONContext()
	if err != nil {
		t.Fatal(err)
	}
	ctx[CtxAssetDir] = assets
	for k, v := range extra {
		ctx[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out")), Context: &ctx})
	return Build(app, StackName, nil)
}

// longestMailFrom is the longest sender the tests deploy with: a 64-character
// display name and a 254-character address (RFC 5321's longest path, less
// its angle brackets).
var longestMailFrom = strings.Repeat("N", 64) + " <" + strings.Repeat("l", 64) + "@" +
	strings.Repeat("d", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("d", 53) + ".example>"

// maxContext is every context value the functions' environments carry at
// the longest the app accepts that still fits: review instructions of
// 2,000 ASCII characters (the most config accepts; quotes, backslashes,
// control characters and non-ASCII take more and are refused, below), 50
// findings, the longest sender, a Bedrock inference profile.
var maxContext = map[string]any{
	CtxCritic: "bedrock", CtxCriticModel: "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
	CtxReviewInstructions: strings.TrimSpace(strings.Repeat("Amounts are int64 cents. ", MaxReviewInstructions/25)) + ".",
	CtxLLMMaxFindings:     "50", CtxMailFrom: longestMailFrom, CtxLogLevel: "debug",
	CtxAllowedRecipientDomains: strings.Repeat("d", MaxAllowedRecipientDomains),
}

// TestEnvironmentSize_RefusedOverTheLimit: an environment that could pass
// Lambda's 4 KB once deployed fails Build (so `cdk synth` and `cdk
// deploy`) with an error naming the function and its biggest variable;
// one at the limit's edge builds. 2,000 quotes are 2,000 characters, as
// config counts them, and 4,000 bytes escaped, as Lambda does.
// Rules: R-LIMIT-1.
func TestEnvironmentSize_RefusedOverTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a build of its own")
	}
	_, err := buildStack(t, map[string]any{CtxCritic: "bedrock", CtxCriticModel: "anthropic.claude-3-5-sonnet-20240620-v1:0",
		CtxReviewInstructions: strings.Repeat(`"`, MaxReviewInstructions)})
	if err == nil {
		t.Fatal("Build accepted 2,000 quotes of review instructions: llm's environment would be over 4 KB once deployed")
	}
	for _, want := range []string{"function llm", "CRITICIZER_REVIEW_INSTRUCTIONS", "4096"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build error %q does not name %s", err, want)
		}
	}
}

// TestEnvironmentSize_AtTheMaximum: with every context value at its longest
// (maxContext) each function's environment fits 4 KB with every table,
// queue, bucket, secret and configuration set name at AWS's maximum; the
// figures, at defaults and at the maximum, are docs/deploy.md's.
// Rules: R-LIMIT-1.
func TestEnvironmentSize_AtTheMaximum(t *testing.T) {
	if testing.Short() {
		t.Skip("two builds of their own")
	}
	figures := map[string][2]int{}
	for i, ctx := range []map[string]any{{}, maxContext} {
		s, err := buildStack(t, ctx)
		if err != nil {
			t.Fatalf("Build at %v: %v", ctx, err)
		}
		sizes, err := environmentSizes(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			if sz.Bytes > LambdaEnvLimit {
				t.Errorf("%s: %d bytes at %v", sz.Function, sz.Bytes, ctx)
			}
			f := figures[sz.Function]
			f[i] = sz.Bytes
			figures[sz.Function] = f
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range functionSpecs {
		row := fmt.Sprintf("| %s | %s | %s |", f.Name, comma(figures[f.Name][0]), comma(figures[f.Name][1]))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/deploy.md lacks the row %q", row)
		}
	}
}

// comma writes n with thousands separators, as the docs do.
func comma(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The sizing itself: literals as Lambda measures them, references at AWS's
// maxima, a variable that may be absent only when present.
// Rules: R-LIMIT-1.
func TestEnvBounds_SizeAsLambdaMeasures(t *testing.T) {
	b := envBounds{types: map[string]string{"Jobs": "AWS::DynamoDB::Table", "Q": "AWS::SQS::Queue", "S": "AWS::SecretsManager::Secret",
		"Api": "AWS::ApiGatewayV2::Api", "Topic": "AWS::SNS::Topic"}, params: map[string]int{"P": 7}}
	cases := []struct {
		v       any
		n       int
		present bool
		err     bool
	}{
		{v: "plain", n: 5, present: true},
		{v: `a"b\c`, n: 7, present: true},
		{v: "\x01", n: 6, present: true},
		{v: "é<&>", n: 5, present: true}, // UTF-8, no HTML escaping
		{v: map[string]any{"Ref": "Jobs"}, n: 255, present: true},
		{v: map[string]any{"Ref": "Q"}, n: maxQueueURL, present: true},
		{v: map[string]any{"Ref": "P"}, n: 7, present: true},
		{v: map[string]any{"Ref": "AWS::NoValue"}},
		{v: map[string]any{"Fn::If": []any{"C", "abc", map[string]any{"Ref": "AWS::NoValue"}}}, n: 3, present: true},
		{v: map[string]any{"Fn::Join": []any{",", []any{map[string]any{"Ref": "S"}, map[string]any{"Ref": "S"}}}}, n: 2*maxSecretARN + 1, present: true},
		{v: map[string]any{"Fn::Sub": "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}"},
			n: len("https://") + 10 + len(".execute-api.") + maxRegion + 1 + maxURLSuffix, present: true},
		{v: map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}, n: maxQueueARN, present: true},
		{v: map[string]any{"Ref": "Topic"}, err: true}, // unbounded: refused, never guessed
		{v: map[string]any{"Fn::ImportValue": "X"}, err: true},
	}
	for _, c := range cases {
		n, present, err := b.maxLen(c.v)
		if (err != nil) != c.err || n != c.n || present != c.present {
			t.Errorf("maxLen(%v) = %d, %t, %v; want %d, %t, error %t", c.v, n, present, err, c.n, c.present, c.err)
		}
	}
	// A decided condition sizes its branch only.
	b.conds = map[string]bool{"On": true, "Off": false}
	for _, c := range []struct {
		cond    string
		n       int
		present bool
	}{{"On", 3, true}, {"Off", 0, false}, {"Unknown", 3, true}} {
		n, present, err := b.maxLen(map[string]any{"Fn::If": []any{c.cond, "abc", map[string]any{"Ref": "AWS::NoValue"}}})
		if err != nil || n != c.n || present != c.present {
			t.Errorf("Fn::If %s: %d, %t, %v; want %d, %t", c.cond, n, present, err, c.n, c.present)
		}
	}
	sz, err := b.size("fn", map[string]any{"AB": "c", "DE": `"`, "GONE": map[string]any{"Ref": "AWS::NoValue"}})
	if err != nil {
		t.Fatal(err)
	}
	// {"AB":"c","DE":"\""}
	if want := len(`{"AB":"c","DE":"\""}`); sz.Bytes != want || sz.Biggest != "DE" || sz.BiggestBytes != len(`"DE":"\""`) {
		t.Errorf("size = %+v, want %d bytes, biggest DE", sz, want)
	}
	// The queue URL bound holds the longest SQS queue name and the longest
	// region and URL suffix in use today.
	longest := "https://sqs.ap-southeast-5.amazonaws.com.cn/123456789012/" + strings.Repeat("q", 80)
	if len(longest) > maxQueueURL {
		t.Errorf("a %d-character queue URL is over the %d bound", len(longest), maxQueueURL)
	}
}

// TestConfigFromContext_ReviewLimits: the model review's settings are
// refused at synth when the llm function would refuse them at start
// (internal/config: at most 2,000 characters of instructions, each
// repository's too; 1 to 50 findings).
// Rules: R-LIMIT-1.
func TestConfigFromContext_ReviewLimits(t *testing.T) {
	synth(t)
	src, err := os.ReadFile(filepath.Join("..", "internal", "config", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`MaxReviewInstructionsRunes\s*=\s*(\d+)`).FindSubmatch(src); m == nil || string(m[1]) != fmt.Sprint(MaxReviewInstructions) {
		t.Errorf("internal/config's MaxReviewInstructionsRunes is not %d (MaxReviewInstructions)", MaxReviewInstructions)
	}
	for _, c := range []struct {
		ctx map[string]any
		err string
	}{
		{ctx: map[string]any{CtxReviewInstructions: strings.Repeat("é", MaxReviewInstructions)}},
		{ctx: map[string]any{CtxReviewInstructions: strings.Repeat("a", MaxReviewInstructions+1)}, err: CtxReviewInstructions},
		{ctx: map[string]any{CtxReviewInstructionsByRepo: `{"acme/store":"` + strings.Repeat("a", MaxReviewInstructions+1) + `"}`}, err: CtxReviewInstructionsByRepo},
		{ctx: map[string]any{CtxReviewInstructionsByRepo: `["not an object"]`}, err: CtxReviewInstructionsByRepo},
		{ctx: map[string]any{CtxLLMMaxFindings: "50"}},
		{ctx: map[string]any{CtxLLMMaxFindings: "51"}, err: CtxLLMMaxFindings},
		{ctx: map[string]any{CtxLLMMaxFindings: "0"}, err: CtxLLMMaxFindings},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &c.ctx})
		_, err := ConfigFromContext(app.Node())
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%.60v: %v", c.ctx, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%.60v: err = %v, want one naming %s", c.ctx, err, c.err)
		}
	}
}
