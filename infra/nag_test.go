package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/criticizer/criticizer/internal/deploy"
)

// nagRule matches cdk-nag AwsSolutions findings. A function, not a
// package variable: no jsii call may run before TestMain sets the
// environment.
func nagRule() any { return assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")) }

// TestNagAwsSolutions: no unsuppressed cdk-nag AwsSolutions finding, at
// the defaults and with the bedrock critic and every context value at its
// worst.
func TestNagAwsSolutions(t *testing.T) {
	for name, s := range map[string]*synthesized{"defaults": synth(t), "bedrock at the worst": synthBedrock(t)} {
		errs := s.annotations.FindError(jsii.String("*"), nagRule())
		for _, e := range *errs {
			t.Errorf("%s: %s: %v", name, *e.Id, e.Entry.Data)
		}
	}
}

// TestNagCatchesFindings proves the check above is not vacuous: the same
// pack on a bare queue reports errors through the same assertion.
func TestNagCatchesFindings(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(t.TempDir(), "cdk.out"))})
	st := awscdk.NewStack(app, jsii.String("Canary"), nil)
	awssqs.NewQueue(st, jsii.String("Bare"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	errs := assertions.Annotations_FromStack(st).FindError(jsii.String("*"), nagRule())
	found := map[string]bool{}
	for _, e := range *errs {
		found[strings.SplitN(fmt.Sprint(e.Entry.Data), ":", 2)[0]] = true
	}
	for _, want := range []string{"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4"} {
		if !found[want] {
			t.Errorf("canary: cdk-nag did not report %s (got %v)", want, found)
		}
	}
}

// TestNagSuppressions: every suppression sits on a resource (none
// stack-wide), carries a reason written for this stack, and is listed in
// Suppressions; the test log is the suppression report.
func TestNagSuppressions(t *testing.T) {
	s := synth(t)
	if get(s.tmpl, "Metadata", "cdk_nag") != nil {
		t.Errorf("stack-wide cdk-nag suppressions: %v", get(s.tmpl, "Metadata", "cdk_nag"))
	}
	known := map[string]bool{}
	for _, x := range Suppressions(deploy.Describe()) {
		known[x.Rule+"|"+x.Reason] = true
	}
	used := map[string]bool{}
	for _, id := range sortedKeys(s.tmpl["Resources"].(map[string]any)) {
		rules, _ := get(s.resource(t, id), "Metadata", "cdk_nag", "rules_to_suppress").([]any)
		for _, r := range rules {
			rule, reason := render(get(r, "id")), render(get(r, "reason"))
			applies := strs(get(r, "applies_to"))
			t.Logf("%-44s %-20s %v\n\t%s", id, rule, applies, reason)
			if !known[rule+"|"+reason] {
				t.Errorf("%s: suppression %s not in Suppressions", id, rule)
			}
			used[rule+"|"+reason] = true
			if len(reason) < 80 || strings.Contains(strings.ToLower(reason), "todo") {
				t.Errorf("%s: %s: reason too thin: %q", id, rule, reason)
			}
			if rule == "AwsSolutions-IAM5" && len(applies) == 0 {
				t.Errorf("%s: IAM5 suppressed for every wildcard; name the finding (appliesTo)", id)
			}
		}
	}
	bedrock := synthBedrock(t)
	for _, id := range sortedKeys(bedrock.tmpl["Resources"].(map[string]any)) {
		rules, _ := get(bedrock.resource(t, id), "Metadata", "cdk_nag", "rules_to_suppress").([]any)
		for _, r := range rules {
			used[render(get(r, "id"))+"|"+render(get(r, "reason"))] = true
		}
	}
	for _, x := range Suppressions(deploy.Describe()) {
		if !used[x.Rule+"|"+x.Reason] {
			t.Errorf("suppression %s %v is applied nowhere: remove it", x.Rule, x.AppliesTo)
		}
	}
}
