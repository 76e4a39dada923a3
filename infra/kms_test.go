package main

import (
	"strings"
	"testing"
)

// The topic key lets SES and CloudWatch encrypt only for this account's
// configuration set and alarms: every statement for a service principal
// carries aws:SourceAccount and aws:SourceArn.
func TestTopicKey_ServicePrincipalsConfined(t *testing.T) {
	s := synth(t)
	keys := s.resources("AWS::KMS::Key")
	if len(keys) != 1 {
		t.Fatalf("%d keys", len(keys))
	}
	services := map[string]string{}
	for _, k := range keys {
		for _, st := range get(props(k), "KeyPolicy", "Statement").([]any) {
			svc, _ := get(st, "Principal", "Service").(string)
			if svc == "" {
				continue
			}
			services[svc] = render(get(st, "Condition", "ArnLike", "aws:SourceArn"))
			if acct := render(get(st, "Condition", "StringEquals", "aws:SourceAccount")); acct != "${AWS::AccountId}" {
				t.Errorf("%s: aws:SourceAccount %s, want the stack's account", svc, acct)
			}
		}
	}
	if arn := services["ses.amazonaws.com"]; !strings.Contains(arn, ":configuration-set/${"+IDConfigurationSet+"}") {
		t.Errorf("SES may use the key for %q, want this stack's configuration set", arn)
	}
	if arn := services["cloudwatch.amazonaws.com"]; !strings.HasSuffix(arn, "${AWS::AccountId}:alarm:*") {
		t.Errorf("CloudWatch may use the key for %q, want this account's alarms", arn)
	}
	if len(services) != 2 {
		t.Errorf("service principals %v, want SES and CloudWatch", services)
	}
}
