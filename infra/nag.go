package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// applyNag runs the cdk-nag AwsSolutions pack over the app. Findings become
// error annotations, which `cdk synth`/`cdk deploy` refuse and the tests
// assert are absent.
func applyNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// Suppression is one accepted cdk-nag finding with its reason.
type Suppression struct {
	Rule      string
	Reason    string
	AppliesTo []string // finding details, e.g. "Resource::*"; empty: the whole rule
}

// Suppression reasons, each written for this stack. The tests list them in
// their output and check none is empty or generic.
var (
	supDiffs = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::<" + deploy.IDPayloadBucket + ".Arn>/diffs/*"},
		Reason: "Object keys are content addressed (diffs/<sha256>, internal/blob), unknown until written; access is limited to " +
			"the diffs/ prefix of the stack's own payload bucket and to the object actions the function needs."}
	supQuarantine = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::<" + deploy.IDPayloadBucket + ".Arn>/" + deploy.QuarantinePrefix + "*"},
		Reason: "The feedback function copies a record that can never be an SES event under quarantine/ of the stack's own " +
			"payload bucket before it acknowledges it (R-EVIDENCE-10); keys are content addressed (internal/blob), unknown " +
			"until written, and the grant is s3:PutObject under that prefix only: it reads and lists nothing."}
	supSESAccount = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"},
		Reason: "ses:GetAccount reads the account's own sending quota in the region (SendQuota: daily quota, send rate, " +
			"sent in the last 24 hours), which notify paces by and pauses on; it acts on no resource, so IAM accepts it only " +
			"on \"*\". It is the only action of that statement, and it is read-only."}
	supBucketLogs = Suppression{Rule: "AwsSolutions-S1",
		Reason: "Private bucket of transient diffs (expire after 30 days), reachable only by the functions' roles over TLS; " +
			"reads and writes are already attributable through the jobs table, and CloudTrail S3 data events " +
			"can be enabled account-wide if auditing is required, without a second bucket to manage."}
	supSecretRotation = Suppression{Rule: "AwsSolutions-SMG4",
		Reason: "The webhook signing secret is shared with external code review systems, which cannot be updated by a " +
			"rotation Lambda; it is rotated by hand (new value here, then at each sender) as docs/operations.md describes."}
	supStageSecretRotation = Suppression{Rule: "AwsSolutions-SMG4",
		Reason: "Holds credentials issued by other systems (GitHub, GitLab, Gerrit tokens; an LLM provider's API key) that no " +
			"rotation Lambda here can mint; they are rotated at their issuer and then put here, as docs/operations.md describes."}
	supUnsubscribeKeyRotation = Suppression{Rule: "AwsSolutions-SMG4",
		Reason: "The unsubscribe key signs the List-Unsubscribe links of emails already delivered, and tokens verify against " +
			"the current key and at most one previous key kept beside it: a scheduled rotation would silently break every " +
			"outstanding unsubscribe link once a key is dropped. It is rotated by hand on suspicion of compromise, keeping the " +
			"old key as CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS while old emails matter, as docs/operations.md describes."}
	// supBedrockRegions accepts the region and model wildcard of llm's grant
	// on the models an inference profile routes to: a profile routes each
	// request to a region AWS chooses and may extend, and the grant holds
	// only through that profile (its condition).
	supBedrockRegions = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*"},
		Reason: "A cross-region inference profile routes each request to the foundation model in one of several regions that " +
			"AWS chooses and may extend (every commercial region for global profiles), and IAM must allow the model in the " +
			"region that serves the call; the statement allows a model only when reached through the one configured profile " +
			"(its bedrock:InferenceProfileArn condition)."}
)

// Suppressions lists every suppression the stack may apply, for the
// report: the route suppressions are the routes' own reasons
// (deploy.Route.Public), and a grant's wildcard suppression its own
// (deploy.Grant.Wildcard).
func Suppressions(d deploy.Deployment) []Suppression {
	out := []Suppression{supDiffs, supQuarantine, supSESAccount, supBucketLogs, supSecretRotation, supStageSecretRotation,
		supUnsubscribeKeyRotation, supBedrockRegions}
	for _, f := range d.Functions {
		out = append(out, grantSuppressions(d, f)...)
	}
	seen := map[string]bool{}
	for _, r := range d.API.Routes {
		if !r.IAM && !seen[r.Public] {
			seen[r.Public] = true
			out = append(out, Suppression{Rule: "AwsSolutions-APIG4", Reason: r.Public})
		}
	}
	return out
}

func (x Suppression) nag() *[]*cdknag.NagPackSuppression {
	n := &cdknag.NagPackSuppression{Id: jsii.String(x.Rule), Reason: jsii.String(x.Reason)}
	if len(x.AppliesTo) > 0 {
		at := make([]interface{}, len(x.AppliesTo))
		for i, a := range x.AppliesTo {
			at[i] = a
		}
		n.AppliesTo = &at
	}
	return &[]*cdknag.NagPackSuppression{n}
}

// applyNagSuppressions attaches each suppression to the resource it is for,
// never stack-wide.
func applyNagSuppressions(s *Stack, d deploy.Deployment, cfg Config) {
	suppress := func(id string, x Suppression) {
		cdknag.NagSuppressions_AddResourceSuppressions(s.Include.GetResource(jsii.String(id)), x.nag(), jsii.Bool(true))
	}
	for _, f := range d.Functions {
		role := deploy.FunctionID(f.Name) + "Role"
		switch f.Name {
		case deploy.FnIntake, deploy.FnFetch, deploy.FnLLM:
			suppress(role, supDiffs)
		case deploy.FnNotify:
			suppress(role, supSESAccount)
		case deploy.FnFeedback:
			suppress(role, supQuarantine)
		}
	}
	for _, f := range d.Functions {
		for _, x := range grantSuppressions(d, f) {
			suppress(deploy.FunctionID(f.Name)+"Role", x)
		}
	}
	if cfg.Values["Critic"] == "bedrock" {
		suppress(deploy.FunctionID(deploy.FnLLM)+"Role", supBedrockRegions)
	}
	for _, r := range d.API.Routes {
		if !r.IAM {
			suppress(cfn.RouteID(r), Suppression{Rule: "AwsSolutions-APIG4", Reason: r.Public})
		}
	}
	suppress(d.Bucket.ID, supBucketLogs)
	suppress(deploy.IDWebhookSecret, supSecretRotation)
	suppress(deploy.IDUnsubscribeSecret, supUnsubscribeKeyRotation)
	suppress(deploy.IDFetchSecret, supStageSecretRotation)
	suppress(deploy.IDCriticSecret, supStageSecretRotation)
	suppress(deploy.IDNotifySecret, supStageSecretRotation)
}

// grantSuppressions are the IAM5 suppressions of f's grants that say why
// their wildcard is accepted (deploy.Grant.Wildcard), each for exactly
// its resources, as cdk-nag names them.
func grantSuppressions(d deploy.Deployment, f deploy.Function) []Suppression {
	var out []Suppression
	for _, g := range d.Grants(f) {
		if g.Wildcard == "" {
			continue
		}
		x := Suppression{Rule: "AwsSolutions-IAM5", Reason: g.Wildcard}
		for _, r := range g.Resources {
			x.AppliesTo = append(x.AppliesTo, "Resource::"+nagName(r))
		}
		out = append(out, x)
	}
	return out
}

// nagName writes a resource as cdk-nag's findings name it: a GetAtt as
// <Id.Attr>, a Ref as <Name>, literals and joins as they read.
func nagName(v deploy.Value) string {
	switch v.Op {
	case "Fn::GetAtt", "Ref":
		return "<" + v.Lit + ">"
	case "Fn::Join":
		parts := make([]string, len(v.Args))
		for i, a := range v.Args {
			parts[i] = nagName(a)
		}
		return strings.Join(parts, v.Lit)
	}
	return v.Lit
}
