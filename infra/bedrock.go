package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Bedrock model identifiers the llm stage accepts as CRITICIZER_BEDROCK_MODEL_ID
// (Converse's modelId), and what each needs in IAM:
//
//   - a foundation model id (anthropic.claude-3-5-sonnet-20240620-v1:0): the
//     foundation model in the stack's region;
//   - a cross-region (system-defined) inference profile id, the model id
//     with a geography prefix (us., eu., apac., us-gov., jp., au., ca., or
//     global.): current Anthropic models on Bedrock are invoked only this
//     way. IAM needs the profile in the stack's region and the foundation
//     model in every region the profile may route to, which for global.
//     profiles is every commercial region and for the others a list AWS
//     may extend, so the model is granted in any region ("*", which also
//     matches the empty region of a global profile's model ARN);
//   - an ARN (an application inference profile, or a provisioned model):
//     that ARN, and the foundation models it may route to only through it
//     (the bedrock:InferenceProfileArn condition), because the template
//     cannot know which model an application profile wraps.
//
// The partition comes from the stack (aws, aws-cn, aws-us-gov), never a
// literal.
var (
	profilePrefix = regexp.MustCompile(`^(us|eu|apac|us-gov|jp|au|ca|global)\.`)
	bedrockModel  = regexp.MustCompile(`^[a-z0-9-]+\.[A-Za-z0-9._:-]+$`)
	bedrockARN    = regexp.MustCompile(`^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:[0-9]{12}:(application-inference-profile|inference-profile|provisioned-model)/[A-Za-z0-9._:-]+$`)
)

// validBedrockModel says whether id is a model id, an inference profile id
// or an ARN the llm stage can invoke; checked at synth so that a typo
// fails the deploy, not every review.
func validBedrockModel(id string) error {
	if bedrockARN.MatchString(id) || bedrockModel.MatchString(id) {
		return nil
	}
	return fmt.Errorf("%q is not a Bedrock model id (anthropic.claude-…), inference profile id (us.anthropic.…, global.…) or ARN", id)
}

// bedrockGrant is the resources (and, for an ARN, the condition) of the
// llm role's bedrock:InvokeModel statement for model id.
type bedrockGrant struct {
	Resources []*string
	// Conditioned resources are allowed only when reached through the
	// profile: StringEquals bedrock:InferenceProfileArn.
	Conditioned []*string
	ProfileARN  string
}

func bedrockGrantFor(st awscdk.Stack, id string) bedrockGrant {
	part := func(s string) *string {
		return awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":bedrock:" + s)})
	}
	region := func(s string) *string {
		return awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":bedrock:"),
			awscdk.Aws_REGION(), jsii.String(s)})
	}
	switch {
	case strings.HasPrefix(id, "arn:"):
		return bedrockGrant{Resources: []*string{jsii.String(id)}, Conditioned: []*string{part("*::foundation-model/*")}, ProfileARN: id}
	case profilePrefix.MatchString(id):
		model := profilePrefix.ReplaceAllString(id, "")
		return bedrockGrant{Resources: []*string{
			awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":bedrock:"),
				awscdk.Aws_REGION(), jsii.String(":"), awscdk.Aws_ACCOUNT_ID(), jsii.String(":inference-profile/" + id)}),
			part("*::foundation-model/" + model),
		}}
	default:
		return bedrockGrant{Resources: []*string{region("::foundation-model/" + id)}}
	}
}
