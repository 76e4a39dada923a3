package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wantEnv is each function's environment: names, and for names whose value
// references resources, the logical ids it references in order,
// comma-separated (envRefs). An independent
// statement of what each function reads, so a change to the stack's
// environment code has to change this too.
var wantEnv = map[string]map[string]string{
	FnIntake: {
		"CRITICIZER_JOBS_TABLE": IDJobsTable, "CRITICIZER_DELIVERIES_TABLE": IDDeliveriesTable,
		"CRITICIZER_PAYLOAD_BUCKET": IDPayloadBucket, "CRITICIZER_FETCH_QUEUE_URL": "FetchQueue",
		// Its webhook credentials, then the unsubscribe key (a list of ARNs).
		"CRITICIZER_SECRETS_ARN": IDWebhookSecret + "," + IDUnsubscribeSecret, "CRITICIZER_IDEMPOTENCY_TTL": "", "LOG_LEVEL": "",
	},
	FnFetch: {
		"CRITICIZER_JOBS_TABLE": IDJobsTable, "CRITICIZER_PAYLOAD_BUCKET": IDPayloadBucket,
		"CRITICIZER_FETCH_QUEUE_URL": "FetchQueue", "CRITICIZER_FETCH_DLQ_URL": "FetchDLQ",
		"CRITICIZER_LLM_QUEUE_URL": "LlmQueue", "CRITICIZER_SECRETS_ARN": IDFetchSecret, "LOG_LEVEL": "",
		"CRITICIZER_MAX_RECEIVE_COUNT": "",
	},
	FnLLM: {
		"CRITICIZER_JOBS_TABLE": IDJobsTable, "CRITICIZER_PAYLOAD_BUCKET": IDPayloadBucket,
		"CRITICIZER_LLM_QUEUE_URL": "LlmQueue", "CRITICIZER_LLM_DLQ_URL": "LlmDLQ",
		"CRITICIZER_NOTIFY_QUEUE_URL": "NotifyQueue", "CRITICIZER_SECRETS_ARN": IDCriticSecret, "LOG_LEVEL": "",
		// The critic, offline by default (the model's variables only with
		// bedrock or openai).
		"CRITICIZER_CRITIC": "",
		// Deadlines and receives (R-STAGE-9, R-STAGE-10).
		"CRITICIZER_MAX_RECEIVE_COUNT": "", "CRITICIZER_MODEL_TIMEOUT": "",
	},
	FnNotify: {
		"CRITICIZER_JOBS_TABLE": IDJobsTable, "CRITICIZER_DELIVERIES_TABLE": IDDeliveriesTable,
		"CRITICIZER_NOTIFY_QUEUE_URL": "NotifyQueue", "CRITICIZER_NOTIFY_DLQ_URL": "NotifyDLQ",
		"CRITICIZER_MAIL_FROM": "", "CRITICIZER_SES_CONFIGURATION_SET": IDConfigurationSet,
		"CRITICIZER_DELIVERY_LEASE": "", "CRITICIZER_EVIDENCE_MARGIN": "", "CRITICIZER_MAX_SEND_RATE": "", "LOG_LEVEL": "",
		// What a send whose answer was lost does past the bound (R-EVIDENCE-9).
		"CRITICIZER_UNCERTAIN_SEND": "",
		// Unsubscribe links: signed with the shared key, under the API's URL.
		"CRITICIZER_SECRETS_ARN": IDUnsubscribeSecret, "CRITICIZER_PUBLIC_URL": IDHTTPAPI,
		"CRITICIZER_MAX_RECEIVE_COUNT": "",
	},
	FnFeedback: {
		// The jobs table for suppressions (SUPP#<id> items) and the resend's
		// reopen; the notify queue for the resend's message (a transient
		// bounce).
		"CRITICIZER_DELIVERIES_TABLE": IDDeliveriesTable, "CRITICIZER_JOBS_TABLE": IDJobsTable,
		"CRITICIZER_NOTIFY_QUEUE_URL": "NotifyQueue", "LOG_LEVEL": "",
		// Where a record that can never be evidence is quarantined.
		"CRITICIZER_PAYLOAD_BUCKET": IDPayloadBucket,
		// The publish bound each Send event is measured against.
		"CRITICIZER_EVIDENCE_MARGIN": "",
	},
	FnSweeper: {
		"CRITICIZER_JOBS_TABLE": IDJobsTable, "CRITICIZER_DELIVERIES_TABLE": IDDeliveriesTable,
		"CRITICIZER_FETCH_QUEUE_URL": "FetchQueue", "CRITICIZER_LLM_QUEUE_URL": "LlmQueue",
		"CRITICIZER_NOTIFY_QUEUE_URL":  "NotifyQueue",
		"CRITICIZER_SWEEP_STUCK_AFTER": "", "CRITICIZER_EVIDENCE_WINDOW": "", "LOG_LEVEL": "",
		"CRITICIZER_EVIDENCE_MARGIN": "", "CRITICIZER_SES_CONFIGURATION_SET": IDConfigurationSet,
		// The drain check's queues, the counters' lag and the schedule
		// (internal/drain).
		"CRITICIZER_SWEEP_EVERY":        "",
		"CRITICIZER_FEEDBACK_QUEUE_URL": "FeedbackQueue", "CRITICIZER_FEEDBACK_DLQ_URL": "FeedbackDLQ",
		"CRITICIZER_EVIDENCE_COUNTER_LAG": "",
	},
}

func (s *synthesized) env(t *testing.T, fn string) map[string]any {
	t.Helper()
	v, _ := get(props(s.resource(t, FunctionID(fn))), "Environment", "Variables").(map[string]any)
	return v
}

// envRefs is the logical ids a value references, in order, comma-separated:
// "JobsTable" for a Ref or GetAtt, "WebhookSecret,UnsubscribeSecret" for a
// joined list, "HttpApi" for a URL built from the API's id, "" for a
// literal. Pseudo parameters (AWS::Region) are not ids.
func envRefs(v any) string { return strings.Join(refs(render(v)), ",") }

func TestEnvironment(t *testing.T) {
	s := synth(t)
	for _, f := range functionSpecs {
		want := wantEnv[f.Name]
		got := s.env(t, f.Name)
		if g, w := sortedKeys(got), sortedKeys(want); !slices.Equal(g, w) {
			t.Errorf("%s: env names\n got  %v\n want %v", f.Name, g, w)
			continue
		}
		for name, ref := range want {
			if envRefs(got[name]) != ref {
				t.Errorf("%s: %s = %v, want a reference to %q", f.Name, name, render(got[name]), ref)
			}
		}
	}
}

// TestNoSecretInEnvironment: the webhook secret reaches intake as the
// secret's ARN, never as a value, and nothing else in any environment is a
// secret: every literal is a known setting.
func TestNoSecretInEnvironment(t *testing.T) {
	s := synth(t)
	literals := map[string]bool{"info": true, "offline": true, testMailFrom: true, IdempotencyTTL: true, DeliveryLease: true,
		SweepStuckAfter: true, EvidenceWindow: true, SweepEvery: true, "resend": true, DefaultMaxSendRate: true, ModelTimeout: true, strconv.Itoa(MaxReceiveCount): true}
	for _, f := range functionSpecs {
		for name, v := range s.env(t, f.Name) {
			r := render(v)
			if strings.Contains(r, "resolve:secretsmanager") || strings.Contains(r, "resolve:ssm-secure") {
				t.Errorf("%s: %s resolves a secret into the environment: %s", f.Name, name, r)
			}
			if strings.Contains(name, "SECRET") && (!strings.HasSuffix(name, "_ARN") || envRefs(v) != wantEnv[f.Name][name]) {
				t.Errorf("%s: %s = %s: secrets travel as the secret's ARN only", f.Name, name, r)
			}
			if name == EnvSecretsARN {
				for _, id := range refs(r) {
					if typ := s.resource(t, id)["Type"]; typ != "AWS::SecretsManager::Secret" {
						t.Errorf("%s: %s references %s, a %v, not a secret", f.Name, name, id, typ)
					}
				}
			}
			if slices.Contains(SecretEnv, name) {
				t.Errorf("%s: %s is in the environment; it belongs in a secret", f.Name, name)
			}
			if len(refs(r)) == 0 && !literals[r] {
				t.Errorf("%s: %s = %q: a literal that is not a known setting", f.Name, name, r)
			}
		}
	}
	// The secret is generated by Secrets Manager, not written in the
	// template: a JSON object whose one key is the webhook secret.
	sec := props(s.resource(t, IDWebhookSecret))
	if sec["SecretString"] != nil || get(sec, "GenerateSecretString", "GenerateStringKey") != EnvWebhookSecret ||
		get(sec, "GenerateSecretString", "SecretStringTemplate") != "{}" {
		t.Errorf("webhook secret: want a generated JSON secret keyed %s, got %v", EnvWebhookSecret, sec)
	}
	// The unsubscribe key likewise: generated, keyed by the setting config
	// reads, long enough for config's 32-byte minimum, alphanumeric.
	uk := props(s.resource(t, IDUnsubscribeSecret))
	if uk["SecretString"] != nil || get(uk, "GenerateSecretString", "GenerateStringKey") != EnvUnsubscribeKey ||
		get(uk, "GenerateSecretString", "SecretStringTemplate") != "{}" ||
		get(uk, "GenerateSecretString", "ExcludePunctuation") != true || num(get(uk, "GenerateSecretString", "PasswordLength")) < 32 {
		t.Errorf("unsubscribe secret: want a generated JSON secret keyed %s, >= 32 characters without punctuation, got %v", EnvUnsubscribeKey, uk)
	}
	// The fetch and llm secrets start empty: the template holds no value.
	for _, id := range []string{IDFetchSecret, IDCriticSecret} {
		if got := props(s.resource(t, id))["SecretString"]; got != "{}" {
			t.Errorf("%s: SecretString %v, want the empty JSON object", id, got)
		}
	}
}

// pendingEnv are names the stack sets that the root code does not read yet
// (name to why it is set); none at the moment.
var pendingEnv = map[string]string{}

// TestEnvNamesMatchRootConfig parses ../internal/config/config.go (the
// names every function reads) and ../internal/job/job.go (the stages), and
// checks every name the stack sets is one of them.
func TestEnvNamesMatchRootConfig(t *testing.T) {
	s := synth(t)
	root := filepath.Join("..", "internal")
	names := stringConsts(t, filepath.Join(root, "config", "config.go"))
	stages := stringConsts(t, filepath.Join(root, "job", "job.go"))
	known := map[string]bool{}
	for k, v := range names {
		if strings.HasPrefix(k, "Env") {
			known[v] = true
		}
	}
	src, _ := os.ReadFile(filepath.Join(root, "config", "config.go"))
	for _, pat := range []string{`"CRITICIZER_" + strings.ToUpper(string(s)) + "_QUEUE_URL"`, `"CRITICIZER_" + strings.ToUpper(string(s)) + "_DLQ_URL"`} {
		if !strings.Contains(string(src), pat) {
			t.Fatalf("config.go no longer builds queue variables as %s: update QueueEnv/DLQEnv here", pat)
		}
	}
	for k, v := range stages {
		if strings.HasPrefix(k, "Stage") && k != "StageDone" {
			known[QueueEnv(v)], known[DLQEnv(v)] = true, true
		}
	}
	// config's list of the settings a secret may hold is infra's, name
	// for name; the generated secrets' keys are among them, and so is the
	// key the rotation in docs/operations.md puts beside the new one.
	secretEnv := returnedList(t, filepath.Join(root, "config", "secrets.go"), "secretSettings", names)
	if !slices.Equal(secretEnv, SecretEnv) {
		t.Errorf("config.SecretEnv()\n %v\nis not infra's SecretEnv\n %v", secretEnv, SecretEnv)
	}
	for _, key := range []string{EnvWebhookSecret, EnvUnsubscribeKey, EnvUnsubscribeKeyPrevious} {
		if !slices.Contains(secretEnv, key) {
			t.Errorf("config.SecretEnv() %v does not allow %s, a key the stack's secrets hold", secretEnv, key)
		}
	}
	if len(known) < 10 {
		t.Fatalf("parsed only %d names from config.go: %v", len(known), known)
	}
	for _, f := range functionSpecs {
		for name := range s.env(t, f.Name) {
			switch {
			case known[name]:
				if why, ok := pendingEnv[name]; ok {
					t.Logf("%s is in config.go now (%s); drop it from pendingEnv once that is committed", name, why)
				}
			case pendingEnv[name] != "":
				t.Logf("%s: %s is set but not read yet: %s", f.Name, name, pendingEnv[name])
			default:
				t.Errorf("%s: %s is not a name internal/config reads", f.Name, name)
			}
		}
	}
	// Names the code defines that must reach their function.
	for name, fn := range map[string]string{"CRITICIZER_MAIL_FROM": FnNotify, "CRITICIZER_SES_CONFIGURATION_SET": FnNotify,
		"CRITICIZER_IDEMPOTENCY_TTL": FnIntake, EnvPublicURL: FnNotify} {
		if !known[name] {
			t.Errorf("config.go no longer reads %s", name)
		}
		if _, ok := s.env(t, fn)[name]; !ok {
			t.Errorf("%s does not get %s", fn, name)
		}
	}
	// feedback's resend enqueues at notify through internal/queue, which
	// finds the URL under config.QueueEnv(job.StageNotify): the name must
	// be that one, built from the stage constant job.go defines.
	notify := QueueEnv(stages["StageNotify"])
	if stages["StageNotify"] == "" || !known[notify] {
		t.Fatalf("job.go has no StageNotify (%q) or %s is not a queue variable", stages["StageNotify"], notify)
	}
	if got := envRefs(s.env(t, FnFeedback)[notify]); got != QueueID(QNotify) {
		t.Errorf("feedback: %s = %q, want a reference to %s (the transient-bounce resend)", notify, got, QueueID(QNotify))
	}
}

// returnedList returns, in order, the strings the slice literal returned
// by the function fn of a Go file lists: each element a string constant
// of consts (by name) or a literal, or a composite literal whose first
// field is one ({EnvName, &c.Field, read}).
func returnedList(t *testing.T, path, fn string, consts map[string]string) []string {
	t.Helper()
	value := func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.Ident:
			v, ok := consts[e.Name]
			return v, ok
		case *ast.BasicLit:
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
		return "", false
	}
	var out []string
	for _, list := range returnedLiterals(t, path, fn) {
		for _, e := range list.Elts {
			if cl, ok := e.(*ast.CompositeLit); ok && len(cl.Elts) > 0 {
				e = cl.Elts[0]
			}
			v, ok := value(e)
			if !ok {
				t.Errorf("%s: %s lists a %T, not a string constant or literal", path, fn, e)
			}
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no list returned by %s found: update returnedList", path, fn)
	}
	return out
}

// returnedLiterals parses the Go file at path and returns the composite
// literals that the function or method fn returns (`return T{...}`). A
// missing file skips: infra checked out without the root module.
func returnedLiterals(t *testing.T, path, fn string) []*ast.CompositeLit {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Skipf("root source not available (%v): infra checked out alone?", err)
	}
	var out []*ast.CompositeLit
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		for _, st := range fd.Body.List {
			if ret, ok := st.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
				if list, ok := ret.Results[0].(*ast.CompositeLit); ok {
					out = append(out, list)
				}
			}
		}
	}
	return out
}

// stringConsts returns a Go file's string constants by name.
func stringConsts(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Skipf("root source not available (%v): infra checked out alone?", err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[name.Name] = v
					}
				}
			}
		}
		return true
	})
	return out
}
