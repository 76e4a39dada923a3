package devstack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// rehearsalStack is what cmd/rehearse binds template.yaml to, with the
// local stack's names made up (no emulator needed).
func rehearsalStack(t *testing.T, tpl *Template) StackValues {
	t.Helper()
	const name = "rehearse-x"
	res := PlaceholderResources(name)
	secrets := map[string]string{}
	for _, id := range tpl.Resources("AWS::SecretsManager::Secret") {
		secrets[id] = "arn:aws:secretsmanager:us-east-1:000000000000:secret:" + id + "-abcdef"
	}
	s, err := BindLocal(tpl, name, res, LocalBinding{Secrets: secrets, ConfigurationSet: name + "-set", HTTPAPIID: "rehearse"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func templateBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every function's environment in template.yaml evaluates, as a deploy
// would, against the rehearsal's stack: each resource reference becomes
// the local resource's name or URL, the variables that only `sam local
// invoke` sets (LocalStackHost) are absent, and a variable written with
// !Sub is substituted.
func TestTemplate_FunctionEnv_EvaluatesTheRealTemplate(t *testing.T) {
	tpl, err := ParseTemplate(templateBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	s := rehearsalStack(t, tpl)
	if len(tpl.Functions()) != len(deploy.Describe().Names()) {
		t.Fatalf("template functions %v, want one per functions/<fn> %v", tpl.Functions(), deploy.Describe().Names())
	}
	for _, fn := range deploy.Describe().Names() {
		env, err := tpl.FunctionEnv(deploy.FunctionID(fn), s)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		if env["CRITICIZER_JOBS_TABLE"] != "rehearse-x-jobs" {
			t.Errorf("%s: CRITICIZER_JOBS_TABLE = %q", fn, env["CRITICIZER_JOBS_TABLE"])
		}
		if env["LOG_LEVEL"] != "info" {
			t.Errorf("%s: LOG_LEVEL (Globals, the parameter's default) = %q", fn, env["LOG_LEVEL"])
		}
		for k := range env {
			if strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == "CRITICIZER_WEBHOOK_SECRET" {
				t.Errorf("%s: %s is set without LocalStackHost", fn, k)
			}
		}
	}
	notify, _ := tpl.FunctionEnv("NotifyFunction", s)
	if got := notify["CRITICIZER_PUBLIC_URL"]; got != "https://rehearse.execute-api.us-east-1.amazonaws.com" {
		t.Errorf("notify CRITICIZER_PUBLIC_URL = %q", got)
	}
	if got := notify["CRITICIZER_NOTIFY_DLQ_URL"]; got != "http://127.0.0.1:1/000000000000/rehearse-x-notify-dlq" {
		t.Errorf("notify CRITICIZER_NOTIFY_DLQ_URL = %q", got)
	}
	intake, _ := tpl.FunctionEnv("IntakeFunction", s)
	if got := intake["CRITICIZER_SECRETS_ARN"]; !strings.Contains(got, ":WebhookSecret-") || !strings.Contains(got, ",arn:") {
		t.Errorf("intake CRITICIZER_SECRETS_ARN (!Join of two secrets) = %q", got)
	}
	llm, _ := tpl.FunctionEnv("LlmFunction", s)
	if _, ok := llm["CRITICIZER_BEDROCK_MODEL_ID"]; ok {
		t.Error("llm: CRITICIZER_BEDROCK_MODEL_ID is set with Critic offline (!If to AWS::NoValue)")
	}
	s.Parameters = map[string]string{"Critic": "bedrock", "CriticModel": "anthropic.claude-x"}
	llm, _ = tpl.FunctionEnv("LlmFunction", s)
	if llm["CRITICIZER_BEDROCK_MODEL_ID"] != "anthropic.claude-x" || llm["CRITICIZER_CRITIC"] != "bedrock" {
		t.Errorf("llm with Critic bedrock: %v", llm)
	}
}

// A reference the stack cannot resolve (here a misspelt table in a copy of
// the template) is an error naming the function and the variable, as the
// deploy would fail on it; the rehearsal stops there.
func TestTemplate_FunctionEnv_UnresolvableReferenceNamesFunctionAndVariable(t *testing.T) {
	src := string(templateBytes(t))
	const good = "          CRITICIZER_DELIVERIES_TABLE: !Ref DeliveriesTable\n          CRITICIZER_NOTIFY_QUEUE_URL"
	if strings.Count(src, good) != 1 {
		t.Fatalf("template.yaml has changed: want notify's %q once", good)
	}
	tpl, err := ParseTemplate([]byte(strings.Replace(src, good, strings.Replace(good, "!Ref DeliveriesTable", "!Ref DeliveryTable", 1), 1)))
	if err != nil {
		t.Fatal(err)
	}
	s := rehearsalStack(t, tpl)
	_, err = tpl.FunctionEnv("NotifyFunction", s)
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Function != "NotifyFunction" || ee.Variable != "CRITICIZER_DELIVERIES_TABLE" ||
		!strings.Contains(err.Error(), "NotifyFunction") || !strings.Contains(err.Error(), "CRITICIZER_DELIVERIES_TABLE") ||
		!errors.Is(err, cfn.ErrUnresolved) {
		t.Fatalf("error %v; want one naming NotifyFunction and CRITICIZER_DELIVERIES_TABLE, unresolvable", err)
	}
	// A resource the template declares but the local stack lacks is as
	// unresolvable as a misspelt one.
	delete(s.Resources, "DeliveriesTable")
	if _, err := tpl.FunctionEnv("SweeperFunction", s); !errors.As(err, &ee) || ee.Function != "SweeperFunction" || ee.Variable != "CRITICIZER_DELIVERIES_TABLE" {
		t.Fatalf("unbound DeliveriesTable: %v", err)
	}
}

// Removing a table variable from one function's environment makes that
// function's evaluated environment lack it (and only that function's):
// the rehearsal runs the bootstrap without it, as Lambda would.
func TestTemplate_FunctionEnv_RemovedVariableIsAbsent(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(templateBytes(t), &doc); err != nil {
		t.Fatal(err)
	}
	vars := cfn.YAMLPath(doc.Content[0], "Resources", "FeedbackFunction", "Properties", "Environment", "Variables")
	removed := false
	for i := 0; vars != nil && i+1 < len(vars.Content); i += 2 {
		if vars.Content[i].Value == "CRITICIZER_JOBS_TABLE" {
			vars.Content = append(vars.Content[:i], vars.Content[i+2:]...)
			removed = true
			break
		}
	}
	if !removed {
		t.Fatal("template.yaml: FeedbackFunction has no CRITICIZER_JOBS_TABLE to remove")
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := ParseTemplate(b)
	if err != nil {
		t.Fatal(err)
	}
	s := rehearsalStack(t, tpl)
	env, err := tpl.FunctionEnv("FeedbackFunction", s)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env["CRITICIZER_JOBS_TABLE"]; ok {
		t.Fatalf("feedback still has CRITICIZER_JOBS_TABLE=%q after its removal", v)
	}
	if env["CRITICIZER_DELIVERIES_TABLE"] != "rehearse-x-deliveries" {
		t.Errorf("feedback lost CRITICIZER_DELIVERIES_TABLE too: %v", env)
	}
	sw, err := tpl.FunctionEnv("SweeperFunction", s)
	if err != nil || sw["CRITICIZER_JOBS_TABLE"] != "rehearse-x-jobs" {
		t.Errorf("sweeper's CRITICIZER_JOBS_TABLE: %q, %v", sw["CRITICIZER_JOBS_TABLE"], err)
	}
}

// A variable whose name Lambda reserves fails the deploy, so the
// evaluation refuses it too, naming it.
func TestTemplate_FunctionEnv_ReservedNameRefused(t *testing.T) {
	src := strings.Replace(string(templateBytes(t)), "  Function:\n    Environment:\n      Variables:\n", "  Function:\n    Environment:\n      Variables:\n        AWS_REGION: eu-west-1\n", 1)
	tpl, err := ParseTemplate([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.FunctionEnv("FetchFunction", rehearsalStack(t, tpl))
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Variable != "AWS_REGION" || ee.Function != "FetchFunction" {
		t.Fatalf("reserved AWS_REGION in Globals: %v", err)
	}
}

// The secrets CloudFormation generates (GenerateSecretString) are JSON
// objects holding the generated key, of the declared length and alphabet.
func TestTemplate_SecretValue_Generated(t *testing.T) {
	tpl, err := ParseTemplate(templateBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := tpl.SecretValue("UnsubscribeSecret", StackValues{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := yaml.Unmarshal([]byte(v), &got); err != nil {
		t.Fatal(err)
	}
	key := got["CRITICIZER_UNSUBSCRIBE_KEY"]
	if len(key) != 64 || strings.ContainsAny(key, "!#$%&()*+,-.:;<=>?@[]^_{|}~") {
		t.Fatalf("generated key %q: want 64 characters without punctuation", key)
	}
	if v, err := tpl.SecretValue("FetchSecret", StackValues{}); err != nil || v != "{}" {
		t.Fatalf("FetchSecret: %q, %v", v, err)
	}
}
