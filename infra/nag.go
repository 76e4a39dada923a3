package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
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
	supDiffs = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::<" + IDPayloadBucket + ".Arn>/diffs/*"},
		Reason: "Object keys are content addressed (diffs/<sha256>, internal/blob), unknown until written; access is limited to " +
			"the diffs/ prefix of the stack's own payload bucket and to the object actions the function needs."}
	supQuarantine = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::<" + IDPayloadBucket + ".Arn>/" + QuarantinePrefix + "*"},
		Reason: "The feedback function copies a record that can never be an SES event under quarantine/ of the stack's own " +
			"payload bucket before it acknowledges it (R-EVIDENCE-10); keys are content addressed (internal/blob), unknown " +
			"until written, and the grant is s3:PutObject under that prefix only: it reads and lists nothing."}
	supTableIndexes = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{
		"Resource::<" + IDJobsTable + ".Arn>/index/*", "Resource::<" + IDDeliveriesTable + ".Arn>/index/*"},
		Reason: "The table grants cover the table's own sparse indexes (LiveJobs, LiveDeliveries) that the sweeper queries; " +
			"an index ARN is the table's ARN plus /index/<name>, on this stack's two tables only, and the indexes hold " +
			"nothing the table does not."}
	supWebhookRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "Code review systems cannot sign SigV4 or fetch tokens: intake authenticates every webhook with its " +
			"source's scheme (HMAC signature over the body, or the shared token GitLab and Gerrit send) against the " +
			"Secrets Manager secret, and refuses the rest with 401."}
	supJobsRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "Job status is polled by the code review integration, which holds no AWS credentials; by design the view " +
			"carries states only, never diff or critique content, with recipients masked (internal/api JobView), since " +
			"job ids derive from changelist ids. Full rows are for operators through the CLI."}
	supHealthRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "Health check for load balancers and uptime probes; answers only {\"status\":\"ok\"|\"unavailable\"}."}
	supUnsubscribeRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "Opened from a link in an email by a recipient without AWS credentials (and RFC 8058 one-click POST); " +
			"the token in the path is the credential, which intake verifies before changing anything."}
	supVoteRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "A reader's vote on a finding, opened from a link in an email by a recipient without AWS credentials; " +
			"the signed, expiring token in the path (no address in it) is the credential, which intake verifies before " +
			"recording anything, and a GET records nothing (R-VOTE-1)."}
	supPreferencesRoute = Suppression{Rule: "AwsSolutions-APIG4",
		Reason: "A reader's preference page, opened from a link in an email by a recipient without AWS credentials; " +
			"the signed, expiring token in the path (no address in it) is the credential, which intake verifies before " +
			"reading or saving anything, and a GET saves nothing (R-PREF-2)."}
	supSESAccount = Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"},
		Reason: "ses:GetAccount reads the account's own sending quota in the region (SendQuota: daily quota, send rate, " +
			"sent in the last 24 hours), which notify paces by and pauses on; it acts on no resource, so IAM accepts it only " +
			"on \"*\". It is the only action of that statement, and it is read-only."}
	supBucketLogs = Suppression{Rule: "AwsSolutions-S1",
		Reason: "Private bucket of transient diffs (expire after 30 days), reachable only by the functions' roles over TLS; " +
			"reads and writes are already attributable through the jobs table and X-Ray, and CloudTrail S3 data events " +
			"can be enabled account-wide if auditing is required, without a second bucket to manage."}
	supSecretRotation = Suppression{Rule: "AwsSolutions-SMG4",
		Reason: "The webhook signing secret is shared with external code review systems, which cannot be updated by a " +
			"rotation Lambda; it is rotated by hand (new value here, then at each sender) as docs/operations.md describes."}
)

// supStageSecretRotation covers the fetch and llm secrets.
var supStageSecretRotation = Suppression{Rule: "AwsSolutions-SMG4",
	Reason: "Holds credentials issued by other systems (GitHub, GitLab, Gerrit tokens; an LLM provider's API key) that no " +
		"rotation Lambda here can mint; they are rotated at their issuer and then put here, as docs/operations.md describes."}

// supUnsubscribeKeyRotation covers the unsubscribe token signing key.
var supUnsubscribeKeyRotation = Suppression{Rule: "AwsSolutions-SMG4",
	Reason: "The unsubscribe key signs the List-Unsubscribe links of emails already delivered, and tokens verify against " +
		"the current key and at most one previous key kept beside it: a scheduled rotation would silently break every " +
		"outstanding unsubscribe link once a key is dropped. It is rotated by hand on suspicion of compromise, keeping the " +
		"old key as CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS while old emails matter, as docs/operations.md describes."}

// Suppressions lists every suppression the stack applies, for reporting.
var Suppressions = []Suppression{supDiffs, supQuarantine, supTableIndexes, supWebhookRoute, supJobsRoute, supHealthRoute, supUnsubscribeRoute,
	supVoteRoute, supPreferencesRoute, supSESAccount, supBucketLogs, supSecretRotation, supStageSecretRotation, supUnsubscribeKeyRotation}

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

func suppress(c any, x Suppression) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, x.nag(), jsii.Bool(true))
}

// applyNagSuppressions attaches each suppression to the resource it is for,
// never stack-wide.
func applyNagSuppressions(s *Stack) {
	for _, f := range functionSpecs {
		role := s.Functions[f.Name].Role()
		switch f.Name {
		case FnIntake, FnFetch, FnLLM:
			suppress(role, supDiffs)
		}
		switch f.Name {
		case FnIntake, FnNotify, FnFeedback, FnSweeper:
			suppress(role, supTableIndexes)
		}
		if f.Name == FnNotify {
			suppress(role, supSESAccount)
		}
		if f.Name == FnFeedback {
			suppress(role, supQuarantine)
		}
	}
	for r, c := range s.RouteConstructs {
		switch {
		case r.IAM:
			continue
		case strings.HasPrefix(r.Path, "/webhooks/"):
			suppress(c, supWebhookRoute)
		case r.Path == "/jobs/{id}":
			suppress(c, supJobsRoute)
		case r.Path == "/healthz":
			suppress(c, supHealthRoute)
		case r.Path == "/unsubscribe/{token}":
			suppress(c, supUnsubscribeRoute)
		case r.Path == "/vote/{token}":
			suppress(c, supVoteRoute)
		case r.Path == "/preferences/{token}":
			suppress(c, supPreferencesRoute)
		}
	}
	if s.Config.Critic == "bedrock" {
		suppress(s.Functions[FnLLM].Role(), supBedrockRegions(s.Config.CriticModel))
	}
	suppress(s.Bucket, supBucketLogs)
	suppress(s.Secret, supSecretRotation)
	suppress(s.UnsubscribeSecret, supUnsubscribeKeyRotation)
	for _, sec := range s.StageSecrets {
		suppress(sec, supStageSecretRotation)
	}
}

// supBedrockRegions accepts the region wildcard of the llm role's grant on
// the chosen foundation model (bedrock.go): an inference profile routes to
// the model in regions AWS chooses and may extend, so they cannot be
// listed. For an application inference profile ARN the model is unknown
// too, and the grant holds only through that profile (its condition).
func supBedrockRegions(model string) Suppression {
	res := "Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/" + profilePrefix.ReplaceAllString(model, "")
	if strings.HasPrefix(model, "arn:") {
		res = "Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*"
	}
	return Suppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{res},
		Reason: "A cross-region inference profile routes each request to the foundation model in one of several regions that " +
			"AWS chooses and may extend (every commercial region for global profiles), and IAM must allow the model in the " +
			"region that serves the call; the grant names the one model (or, for an application profile, any model reached " +
			"only through that profile by the bedrock:InferenceProfileArn condition)."}
}
