package main

import (
	"fmt"
	"slices"
	"sort"
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

// alarmModel is what two templates' alarms must agree on.
type alarmModel struct {
	Stat                string
	Period, Threshold   float64
	Comparison, Missing string
	EvaluationPeriods   float64
}

// alarmsOf models a template's alarms by what they watch: the metric's
// namespace, name and dimensions (each dimension's value as the resource
// it references), or the Metrics Insights query.
func alarmsOf(t *testing.T, name string, res map[string]map[string]any) map[string]alarmModel {
	t.Helper()
	out := map[string]alarmModel{}
	for id, r := range res {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := props(r)
		m := alarmModel{Threshold: num(p["Threshold"]), Comparison: render(p["ComparisonOperator"]),
			Missing: render(p["TreatMissingData"]), EvaluationPeriods: num(p["EvaluationPeriods"])}
		var watched string
		metric := func(ns, metric, dims any) string {
			var ds []string
			for _, d := range asList(dims) {
				ds = append(ds, fmt.Sprintf("%s=%s", render(get(d, "Name")), refID(get(d, "Value"))))
			}
			sort.Strings(ds)
			return fmt.Sprintf("%s/%s{%s}", render(ns), render(metric), strings.Join(ds, ","))
		}
		switch metrics := asList(p["Metrics"]); {
		case p["MetricName"] != nil:
			watched = metric(p["Namespace"], p["MetricName"], p["Dimensions"])
			m.Stat, m.Period = render(p["Statistic"]), num(p["Period"])
		case len(metrics) == 1 && get(metrics[0], "MetricStat") != nil:
			ms := get(metrics[0], "MetricStat")
			watched = metric(get(ms, "Metric", "Namespace"), get(ms, "Metric", "MetricName"), get(ms, "Metric", "Dimensions"))
			m.Stat, m.Period = render(get(ms, "Stat")), num(get(ms, "Period"))
		case len(metrics) == 1 && get(metrics[0], "Expression") != nil:
			watched = render(get(metrics[0], "Expression"))
			m.Period = num(get(metrics[0], "Period"))
		default:
			t.Errorf("%s: alarm %s: neither one metric nor one query", name, id)
			continue
		}
		if _, dup := out[watched]; dup {
			t.Errorf("%s: two alarms on %s", name, watched)
		}
		out[watched] = m
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestSAMAlarmsAgreeWithCDK: template.yaml, a deploy path like the CDK
// app (docs/deploy.md), has the CDK stack's alarms: the same metrics (by
// namespace, name and the resources their dimensions name) or Metrics
// Insights queries, with the same statistic, period, threshold,
// comparison, evaluation periods and missing-data treatment; and they
// reach a person as the CDK stack's do (R-DEPLOY-2).
func TestSAMAlarmsAgreeWithCDK(t *testing.T) {
	sam := resourcesOf(loadSAM(t))
	want, got := alarmsOf(t, "CDK", resourcesOf(synth(t).tmpl)), alarmsOf(t, "SAM", sam)
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		if !ok {
			t.Errorf("template.yaml has no alarm on %s", k)
			continue
		}
		diff(t, "alarm on "+k, g, want[k])
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("template.yaml alarms on %s, which the CDK stack does not", k)
		}
	}
	checkAlarmsReachAPerson(t, "SAM", sam)

	// The alarm email is subscribed only when given.
	subscribed := false
	for id, r := range sam {
		if r["Type"] == "AWS::SNS::Subscription" && get(props(r), "Protocol") == "email" {
			subscribed = true
			cond, _ := r["Condition"].(string)
			if cond == "" || refID(get(props(r), "Endpoint")) != "AlarmEmail" {
				t.Errorf("SAM %s: an email subscription to %v, condition %q; want the AlarmEmail parameter, only when set", id, render(get(props(r), "Endpoint")), cond)
			}
		}
	}
	if !subscribed {
		t.Error("template.yaml subscribes no AlarmEmail to the alarm topic")
	}
}
