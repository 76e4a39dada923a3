package main

import (
	"slices"
	"strings"
	"testing"
)

// alarmSourceARN is the ARN pattern of this account's alarms, as both
// templates render it.
const alarmSourceARN = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:*"

// condition reads a policy condition's value by operator and key, the key
// in any case (IAM condition keys are case-insensitive: SES's statement is
// written AWS:SourceArn, CloudWatch's aws:SourceArn).
func condition(st any, op, key string) string {
	m, _ := get(st, "Condition", op).(map[string]any)
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return render(v)
		}
	}
	return ""
}

// checkAlarmsReachAPerson: every alarm of a template (one at least)
// notifies exactly one SNS topic when it fires and when it clears, and
// that topic's policy lets CloudWatch publish (this account's alarms only)
// beside the Deny of non-TLS publishes; if the topic is encrypted, its
// key lets CloudWatch encrypt for this account's alarms. Without the
// Allow, the topic policy (which replaces SNS's default one) lets no
// alarm publish (R-DEPLOY-2).
func checkAlarmsReachAPerson(t *testing.T, name string, res map[string]map[string]any) {
	t.Helper()
	topics := map[string]bool{}
	n := 0
	for id, r := range res {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		n++
		for _, field := range []string{"AlarmActions", "OKActions"} {
			acts, _ := props(r)[field].([]any)
			if len(acts) != 1 || refID(acts[0]) == "" {
				t.Errorf("%s: alarm %s: %s %v, want exactly the alarm topic", name, id, field, strs(acts))
				continue
			}
			topics[refID(acts[0])] = true
		}
	}
	if n == 0 {
		t.Fatalf("%s: no alarms", name)
	}
	if len(topics) != 1 {
		t.Fatalf("%s: alarms notify %v, want one topic", name, sortedKeys(topics))
	}
	topic := sortedKeys(topics)[0]
	if res[topic]["Type"] != "AWS::SNS::Topic" {
		t.Fatalf("%s: alarms notify %s, a %v, want an SNS topic", name, topic, res[topic]["Type"])
	}

	var allow, deny int
	for id, r := range res {
		if r["Type"] != "AWS::SNS::TopicPolicy" || !slices.ContainsFunc(props(r)["Topics"].([]any), func(v any) bool { return refID(v) == topic }) {
			continue
		}
		sts, _ := get(props(r), "PolicyDocument", "Statement").([]any)
		for _, st := range sts {
			publish := slices.Contains(strs(get(st, "Action")), "sns:Publish")
			onTopic := refID(get(st, "Resource")) == topic
			switch {
			case get(st, "Effect") == "Deny" && publish && onTopic && get(st, "Principal") == "*" &&
				condition(st, "Bool", "aws:SecureTransport") == "false":
				deny++
			case get(st, "Effect") == "Allow" && get(st, "Principal", "Service") == "cloudwatch.amazonaws.com":
				if !publish || !onTopic {
					t.Errorf("%s: %s: CloudWatch may %v on %v, want sns:Publish on the alarm topic", name, id, strs(get(st, "Action")), render(get(st, "Resource")))
				}
				if got := condition(st, "StringEquals", "aws:SourceAccount"); got != "${AWS::AccountId}" {
					t.Errorf("%s: %s: CloudWatch's aws:SourceAccount %q, want the stack's account", name, id, got)
				}
				if got := condition(st, "ArnLike", "aws:SourceArn"); got != alarmSourceARN {
					t.Errorf("%s: %s: CloudWatch's aws:SourceArn %q, want ArnLike %s", name, id, got, alarmSourceARN)
				}
				allow++
			}
		}
	}
	if allow != 1 {
		t.Errorf("%s: %d statements allow CloudWatch to publish to the alarm topic %s, want 1: no alarm would reach anyone", name, allow, topic)
	}
	if deny != 1 {
		t.Errorf("%s: %d statements deny non-TLS publishes to the alarm topic, want 1", name, deny)
	}

	key := refID(props(res[topic])["KmsMasterKeyId"])
	if key == "" {
		return
	}
	granted := false
	for _, st := range get(props(res[key]), "KeyPolicy", "Statement").([]any) {
		if get(st, "Effect") == "Allow" && get(st, "Principal", "Service") == "cloudwatch.amazonaws.com" {
			acts := strs(get(st, "Action"))
			granted = slices.Contains(acts, "kms:GenerateDataKey*") && slices.Contains(acts, "kms:Decrypt") &&
				condition(st, "StringEquals", "aws:SourceAccount") == "${AWS::AccountId}" &&
				condition(st, "ArnLike", "aws:SourceArn") == alarmSourceARN
		}
	}
	if !granted {
		t.Errorf("%s: the alarm topic is encrypted with %s, whose policy does not let CloudWatch (this account's alarms) use it", name, key)
	}
}

// TestAlarmTopic_CloudWatchMayPublish: in the synthesized stack every
// alarm notifies the alarm topic, whose policy allows CloudWatch to
// publish beside the SSL Deny (R-DEPLOY-2).
func TestAlarmTopic_CloudWatchMayPublish(t *testing.T) {
	checkAlarmsReachAPerson(t, "CDK", resourcesOf(synth(t).tmpl))
}
