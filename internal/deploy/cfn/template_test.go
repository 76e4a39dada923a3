package cfn_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// templatePath is the committed template.yaml.
var templatePath = filepath.Join("..", "..", "..", "template.yaml")

// template.yaml is generated: the committed file is byte for byte what
// `make template` writes from the description, so an edit by hand, or a
// change to the description without `make template`, fails here.
func TestTemplateYAML_IsWhatMakeTemplateWrites(t *testing.T) {
	tpl, err := cfn.SAM(deploy.Describe())
	if err != nil {
		t.Fatal(err)
	}
	want, err := tpl.YAML()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("template.yaml is not what make template writes: line %d is\n  %s\nwant\n  %s\n(run make template)", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("template.yaml has %d lines, make template writes %d (run make template)", len(gl), len(wl))
	}
}

// docs/deploy.md's deploy-time table is what make template writes from the
// parameters: a parameter added to the description is documented by
// make template, never by hand.
func TestDeployTimeTable_IsWhatMakeTemplateWrites(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := cfn.WithDeployTimeTable(string(b), deploy.Describe())
	if !ok {
		t.Fatal("docs/deploy.md has no deploy-time table markers")
	}
	if string(b) != want {
		t.Fatal("docs/deploy.md's deploy-time table is not what make template writes (run make template)")
	}
}

// cfnLint runs cfn-lint (on the machine image; CI has it) over a template.
func cfnLint(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is not installed (pip install cfn-lint, or the Debian package): %v", err)
	}
	if out, err := exec.Command(bin, "--", path).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// Both renderings lint clean: template.yaml (cfn-lint applies the SAM
// transform first), and the CDK app's template at the defaults and with
// every context value at its worst under the bedrock critic (the infra
// tests lint what the CDK app synthesizes from it).
func TestCfnLint_BothRenderings(t *testing.T) {
	if testing.Short() {
		t.Skip("cfn-lint")
	}
	// Each run takes seconds of Python start-up: side by side.
	t.Run("template.yaml", func(t *testing.T) { t.Parallel(); cfnLint(t, templatePath) })
	d := deploy.Describe()
	for name, values := range map[string]map[string]string{"defaults": nil, "worst": worstValues(t, d, config.CriticBedrock)} {
		tpl, err := cfn.CDK(d, values)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(tpl)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "cdk-"+name+".json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Run("CDK "+name, func(t *testing.T) { t.Parallel(); cfnLint(t, p) })
	}
}

// rendered is the CDK app's rendering with values, as JSON values.
func rendered(t *testing.T, values map[string]string) map[string]any {
	t.Helper()
	tpl, err := cfn.CDK(deploy.Describe(), values)
	if err != nil {
		t.Fatal(err)
	}
	return tpl.Value()
}

func resources(tmpl map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		out[id] = r.(map[string]any)
	}
	return out
}

func get(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// text writes a value with its references as ${Id} and ${Id.Attr}.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = text(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		for k, a := range x {
			switch k {
			case "Ref":
				return "${" + text(a) + "}"
			case "Fn::GetAtt":
				l := a.([]any)
				return "${" + text(l[0]) + "." + text(l[1]) + "}"
			case "Fn::Join":
				l := a.([]any)
				var parts []string
				for _, e := range l[1].([]any) {
					parts = append(parts, text(e))
				}
				return strings.Join(parts, text(l[0]))
			case "Fn::Sub":
				return text(a)
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func list(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = text(e)
		}
		return out
	}
	return []string{text(v)}
}

// grant is one action on one resource, with its statement's condition.
type grant struct{ action, resource, condition string }

// grants lists what function fn's role allows.
func grants(t *testing.T, tmpl map[string]any, fn string) []grant {
	t.Helper()
	role := resources(tmpl)[deploy.FunctionID(fn)+"Role"]
	if role == nil {
		t.Fatalf("%s has no role of its own", fn)
	}
	if get(role, "Properties", "ManagedPolicyArns") != nil {
		t.Errorf("%s's role has managed policies", fn)
	}
	var out []grant
	for _, p := range get(role, "Properties", "Policies").([]any) {
		for _, st := range get(p, "PolicyDocument", "Statement").([]any) {
			if get(st, "Effect") != "Allow" || get(st, "NotAction") != nil || get(st, "NotResource") != nil {
				t.Errorf("%s: unexpected statement %v", fn, st)
			}
			cond, _ := json.Marshal(get(st, "Condition"))
			for _, a := range list(get(st, "Action")) {
				for _, r := range list(get(st, "Resource")) {
					out = append(out, grant{a, r, string(cond)})
				}
			}
		}
	}
	return out
}

// on is the resources action is granted on, as the logical ids they name
// (a table's ARN and its indexes' are the table).
func on(gs []grant, action string) []string {
	var out []string
	for _, g := range gs {
		if g.action != action {
			continue
		}
		id := strings.TrimPrefix(g.resource, "${")
		id, _, _ = strings.Cut(id, ".")
		id, _, _ = strings.Cut(id, "}")
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// What no function may be granted, whatever its code does: a wildcard
// action, any resource ("*", but ses:GetAccount, which acts on none), the
// objects of the whole bucket rather than one prefix, or sending mail but
// notify. That each function is granted what its code does is proved by
// observation, in the end-to-end run (internal/e2e
// TestLeastPrivilege_EveryCallGranted), not restated here.
func TestGrants_NoWildcardsNoMailButNotify(t *testing.T) {
	tmpl := rendered(t, nil)
	for _, fn := range deploy.Describe().Names() {
		for _, g := range grants(t, tmpl, fn) {
			if strings.Contains(g.action, "*") || g.resource == "*" && g.action != "ses:GetAccount" {
				t.Errorf("%s: %s on %s: a wildcard", fn, g.action, g.resource)
			}
			if strings.HasPrefix(g.action, "s3:") && g.action != "s3:ListBucket" && g.resource == "${"+deploy.IDPayloadBucket+".Arn}/*" {
				t.Errorf("%s: %s on every object of the bucket", fn, g.action)
			}
			if strings.HasPrefix(g.action, "ses:SendEmail") != (fn == deploy.FnNotify && g.action == "ses:SendEmail") {
				t.Errorf("%s may %s", fn, g.action)
			}
		}
	}
}

// notify sends as the sender only, through the configuration set only:
// its identity (its domain, or SesIdentity when set) and its address,
// whichever SES verified, in both renderings (template.yaml derives them
// from MailFrom with intrinsics).
func TestNotify_SendsAsTheSenderOnly(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   []string
	}{
		{map[string]string{"MailFrom": "Reviews <critic@reviews.example.org>"}, []string{"identity/reviews.example.org", "identity/critic@reviews.example.org"}},
		{map[string]string{"MailFrom": "critic@reviews.example.org"}, []string{"identity/reviews.example.org", "identity/critic@reviews.example.org"}},
		{map[string]string{"MailFrom": "critic@reviews.example.org", "SesIdentity": "example.org"}, []string{"identity/example.org", "identity/critic@reviews.example.org"}},
	} {
		var got []string
		for _, g := range grants(t, rendered(t, tc.values), deploy.FnNotify) {
			if g.action == "ses:SendEmail" {
				_, res, _ := strings.Cut(g.resource, "${AWS::AccountId}:")
				got = append(got, res)
			}
		}
		want := append(tc.want, "configuration-set/${"+deploy.IDConfigurationSet+"}")
		if !slices.Equal(got, want) {
			t.Errorf("%v: ses:SendEmail on %q, want %q", tc.values, got, want)
		}
	}
}

// fetch and llm reach the jobs table only through keyed items: every
// statement on it carries a dynamodb:LeadingKeys condition, each with
// exactly its actions on its prefixes.
// Rules: R-REVIEWERS-4, R-BUDGET-1, R-SOURCE-6.
func TestJobItemsOnly_LeadingKeysCondition(t *testing.T) {
	tmpl := rendered(t, nil)
	keys := func(prefixes ...string) string {
		var out []string
		for _, p := range prefixes {
			out = append(out, p+"*")
		}
		return strings.Join(out, ",")
	}
	jobItems := "dynamodb:GetItem,dynamodb:UpdateItem on " + keys(schema.PrefixJob, schema.PrefixSourceRef)
	want := map[string][]string{
		deploy.FnLLM: {jobItems, "dynamodb:UpdateItem on " + keys(schema.PrefixBudget),
			// The repository's accepted learnings (R-LEARN-2).
			"dynamodb:GetItem on " + keys(schema.PrefixLearning)},
		deploy.FnFetch: {jobItems, "dynamodb:GetItem on " + keys(schema.PrefixRoster), "dynamodb:BatchGetItem on " + keys(schema.PrefixDirectory),
			"dynamodb:UpdateItem on " + keys(schema.PrefixUnknown),
			// A pending head's place, read and settled (R-SOURCE-6).
			"dynamodb:GetItem,dynamodb:UpdateItem on " + keys(schema.PrefixHeadSHA)},
	}
	for fn, w := range want {
		role := resources(tmpl)[deploy.FunctionID(fn)+"Role"]
		var got []string
		for _, p := range get(role, "Properties", "Policies").([]any) {
			for _, st := range get(p, "PolicyDocument", "Statement").([]any) {
				if !strings.Contains(text(get(st, "Resource")), deploy.IDJobsTable) {
					continue
				}
				actions := list(get(st, "Action"))
				sort.Strings(actions)
				got = append(got, strings.Join(actions, ",")+" on "+strings.Join(list(get(st, "Condition", "ForAllValues:StringLike", "dynamodb:LeadingKeys")), ","))
			}
		}
		sort.Strings(got)
		sort.Strings(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: jobs table statements %q, want %q", fn, got, w)
		}
	}
}

// With the bedrock critic llm alone may invoke the model: the model, or
// the inference profile, and the models a profile routes to only through
// it; with another critic nobody may.
func TestBedrock_OnlyLLMOnlyTheModel(t *testing.T) {
	model := "us.anthropic.claude-sonnet-4-20250514-v1:0"
	tmpl := rendered(t, map[string]string{"Critic": "bedrock", "CriticModel": model})
	for _, f := range deploy.Describe().Functions {
		var got []string
		for _, g := range grants(t, tmpl, f.Name) {
			if strings.HasPrefix(g.action, "bedrock:") {
				got = append(got, g.resource+" "+g.condition)
			}
		}
		if f.Name != deploy.FnLLM {
			if len(got) > 0 {
				t.Errorf("%s may invoke %v", f.Name, got)
			}
			continue
		}
		profile := "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/" + model
		want := []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/" + model + " null",
			profile + " null",
			`arn:${AWS::Partition}:bedrock:*::foundation-model/* {"StringEquals":{"bedrock:InferenceProfileArn":{"Fn::Sub":"` + profile + `"}}}`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("llm may invoke\n%q\nwant\n%q", got, want)
		}
	}
	for _, g := range grants(t, rendered(t, nil), deploy.FnLLM) {
		if strings.HasPrefix(g.action, "bedrock:") {
			t.Errorf("with the offline critic llm may %s on %s", g.action, g.resource)
		}
	}
}

// Each secret is readable by its own functions only, and no function's
// environment holds a setting that belongs in a secret.
// Rules: R-DEPLOY-5.
func TestSecrets_ReadByTheirFunctionsOnly(t *testing.T) {
	d := deploy.Describe()
	tmpl := rendered(t, nil)
	owners := map[string][]string{deploy.IDWebhookSecret: {deploy.FnIntake}, deploy.IDFetchSecret: {deploy.FnFetch},
		deploy.IDCriticSecret: {deploy.FnLLM}, deploy.IDUnsubscribeSecret: {deploy.FnIntake, deploy.FnNotify, deploy.FnReply},
		deploy.IDNotifySecret: {deploy.FnNotify}}
	for _, f := range d.Functions {
		for _, g := range grants(t, tmpl, f.Name) {
			for id, own := range owners {
				if strings.Contains(g.resource, "${"+id+"}") && !slices.Contains(own, f.Name) {
					t.Errorf("%s may %s on %s", f.Name, g.action, id)
				}
			}
		}
		for _, v := range d.Environment(f) {
			if slices.Contains(config.SecretEnv(), v.Name) {
				t.Errorf("%s's environment holds %s, a secret's setting", f.Name, v.Name)
			}
		}
	}
}

// llm's event source polls with at most 3 concurrent invocations, notify's
// with at most 5: a burst of reviews takes neither the account's
// concurrency (10 on a new account, 2 left for the others) nor the
// model's token quota; in both renderings.
// Rules: R-LIMIT-4.
func TestEventSources_CapConcurrency(t *testing.T) {
	want := map[string]int{deploy.QueueID("llm"): 3, deploy.QueueID("notify"): 5, deploy.QueueID(deploy.QReply): 2}
	if want[deploy.QueueID("llm")]+want[deploy.QueueID("notify")] > 10-2 {
		t.Fatal("the caps leave less than 2 of an account's 10")
	}
	// Replies are rare and SQS's smallest cap is 2: with replies flowing
	// at the peak of a review burst, the three together take the 10.
	if want[deploy.QueueID(deploy.QReply)] != 2 {
		t.Fatal("reply's cap is above SQS's smallest")
	}
	sam, err := cfn.SAM(deploy.Describe())
	if err != nil {
		t.Fatal(err)
	}
	for name, tmpl := range map[string]map[string]any{"template.yaml": sam.Value(), "CDK": rendered(t, nil)} {
		n := 0
		for id, r := range resources(tmpl) {
			if r["Type"] != "AWS::Lambda::EventSourceMapping" {
				continue
			}
			q := strings.Trim(strings.TrimSuffix(text(get(r, "Properties", "EventSourceArn")), ".Arn}"), "${")
			got, _ := get(r, "Properties", "ScalingConfig", "MaximumConcurrency").(float64)
			if mc, ok := want[q]; ok {
				n++
				if int(got) != mc {
					t.Errorf("%s %s: MaximumConcurrency %v, want %d", name, id, got, mc)
				}
			}
		}
		if n != len(want) {
			t.Errorf("%s: %d capped event sources, want %d", name, n, len(want))
		}
	}
}

// Both renderings deploy exactly the routes intake serves (deploy.Routes,
// which internal/api's TestRoutes_TableIsWhatHandleServes holds the router
// to), with IAM on /admin/* and on nothing else.
// Rules: R-DEPLOY-1.
func TestRoutesDeployed(t *testing.T) {
	var want []string
	for _, r := range deploy.Routes() {
		if r.IAM != strings.HasPrefix(r.Path, "/admin/") {
			t.Errorf("%s: IAM %v; IAM is for /admin/* only", r.Key(), r.IAM)
		}
		if !r.IAM && r.Public == "" {
			t.Errorf("%s: no IAM and no reason it needs none", r.Key())
		}
		auth := "NONE"
		if r.IAM {
			auth = "AWS_IAM"
		}
		want = append(want, r.Key()+" "+auth)
	}
	sort.Strings(want)
	sam, err := cfn.SAM(deploy.Describe())
	if err != nil {
		t.Fatal(err)
	}
	for name, tmpl := range map[string]map[string]any{"template.yaml": sam.Value(), "CDK": rendered(t, nil)} {
		var got []string
		for _, r := range resources(tmpl) {
			if r["Type"] == "AWS::ApiGatewayV2::Route" {
				got = append(got, text(get(r, "Properties", "RouteKey"))+" "+text(get(r, "Properties", "AuthorizationType")))
				if tgt := text(get(r, "Properties", "Target")); tgt != "integrations/${HttpApiIntegration}" {
					t.Errorf("%s: a route targets %s", name, tgt)
				}
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s routes:\n%q\nwant\n%q", name, got, want)
		}
	}
}

// Every alarm notifies the alarm topic, and only it, when it fires and when
// it clears; the topic's policy keeps the TLS Deny and lets CloudWatch
// publish for this account's alarms only, and its key lets CloudWatch
// encrypt under the same conditions.
// Rules: R-DEPLOY-2.
func TestAlarmTopic_CloudWatchMayPublish(t *testing.T) {
	tmpl := rendered(t, nil)
	res := resources(tmpl)
	alarms := 0
	for id, r := range res {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		alarms++
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if got := list(get(r, "Properties", k)); !slices.Equal(got, []string{"${" + deploy.IDAlarmTopic + "}"}) {
				t.Errorf("%s: %s %v, want the alarm topic only", id, k, got)
			}
		}
	}
	if alarms != len(deploy.Describe().Alarms) || alarms == 0 {
		t.Errorf("%d alarms rendered, %d described", alarms, len(deploy.Describe().Alarms))
	}
	source := "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:*"
	var allow, deny int
	for _, st := range get(res[deploy.IDAlarmTopic+"Policy"], "Properties", "PolicyDocument", "Statement").([]any) {
		switch {
		case get(st, "Effect") == "Deny" && text(get(st, "Condition", "Bool", "aws:SecureTransport")) == "false":
			deny++
		case get(st, "Effect") == "Allow" && get(st, "Principal", "Service") == "cloudwatch.amazonaws.com" &&
			text(get(st, "Action")) == "sns:Publish" && text(get(st, "Condition", "ArnLike", "aws:SourceArn")) == source &&
			text(get(st, "Condition", "StringEquals", "aws:SourceAccount")) == "${AWS::AccountId}":
			allow++
		}
	}
	if allow != 1 || deny != 1 {
		t.Errorf("the alarm topic's policy: %d CloudWatch allows, %d TLS denies; want 1 each", allow, deny)
	}
	key := false
	for _, st := range get(res[deploy.IDTopicKey], "Properties", "KeyPolicy", "Statement").([]any) {
		key = key || get(st, "Principal", "Service") == "cloudwatch.amazonaws.com" && text(get(st, "Condition", "ArnLike", "aws:SourceArn")) == source
	}
	if !key {
		t.Error("the topics' key does not let CloudWatch encrypt for this account's alarms")
	}
}

// Deleting or replacing the stack keeps what holds state — the tables,
// queues and dead-letter queues (work in flight, dead letters awaiting
// triage), the bucket, the secrets, the topics' key and the log groups —
// under logical ids that never change (a new id would replace the
// resource and orphan what it holds), in both renderings.
func TestStatefulResources_RetainedUnderTheirIDs(t *testing.T) {
	want := []string{deploy.IDJobsTable, deploy.IDDeliveriesTable, deploy.IDPayloadBucket, deploy.IDWebhookSecret, deploy.IDUnsubscribeSecret,
		deploy.IDFetchSecret, deploy.IDCriticSecret, deploy.IDNotifySecret, deploy.IDTopicKey,
		"FetchQueue", "FetchDLQ", "LlmQueue", "LlmDLQ", "NotifyQueue", "NotifyDLQ", "FeedbackQueue", "FeedbackDLQ"}
	sam, err := cfn.SAM(deploy.Describe())
	if err != nil {
		t.Fatal(err)
	}
	for name, tmpl := range map[string]map[string]any{"template.yaml": sam.Value(), "CDK": rendered(t, nil)} {
		res := resources(tmpl)
		for _, id := range want {
			if r := res[id]; r == nil || r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
				t.Errorf("%s: %s is not a retained resource", name, id)
			}
		}
		for id, r := range res {
			switch r["Type"] {
			case "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::SecretsManager::Secret", "AWS::KMS::Key", "AWS::Logs::LogGroup":
				if r["DeletionPolicy"] != "Retain" {
					t.Errorf("%s: %s (%s) is deleted with the stack", name, id, r["Type"])
				}
			}
		}
	}
}
