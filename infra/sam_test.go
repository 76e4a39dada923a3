package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// samTemplatePath is the SAM template at the repository root.
var samTemplatePath = filepath.Join("..", "template.yaml")

// loadSAM reads template.yaml into the JSON shape CloudFormation uses:
// the short-form intrinsics (!Ref, !GetAtt, !Sub, ...) are YAML tags, which
// a plain decode rejects or drops, so the document is walked as yaml.Node
// and each tag becomes its long form ({"Ref": ...}, {"Fn::GetAtt": [...]}).
func loadSAM(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(samTemplatePath)
	if err != nil {
		t.Fatalf("read SAM template: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", samTemplatePath, err)
	}
	v, err := fromYAML(&doc)
	if err != nil {
		t.Fatalf("%s: %v", samTemplatePath, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: not a mapping", samTemplatePath)
	}
	return m
}

func fromYAML(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("want one document, got %d", len(n.Content))
		}
		return fromYAML(n.Content[0])
	case yaml.AliasNode:
		return fromYAML(n.Alias)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			val, err := fromYAML(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := fromYAML(c)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		v = l
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			v = n.Value // an intrinsic's argument stays a string
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	switch tag := strings.TrimPrefix(n.Tag, "!"); tag {
	case "Ref", "Condition":
		return map[string]any{tag: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			parts := strings.SplitN(s, ".", 2)
			if len(parts) != 2 {
				return nil, fmt.Errorf("line %d: !GetAtt %q: want Resource.Attribute", n.Line, s)
			}
			return map[string]any{"Fn::GetAtt": []any{parts[0], parts[1]}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	case "Sub", "Join", "Select", "Split", "If", "Equals", "Not", "And", "Or", "FindInMap", "Base64", "Cidr",
		"GetAZs", "ImportValue", "Transform", "Length", "ToJsonString":
		return map[string]any{"Fn::" + tag: v}, nil
	}
	return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
}

// fnModel is what the two templates must agree on for one function.
type fnModel struct {
	Runtime, Handler, Tracing, LogFormat string
	Architectures                        []string
	Memory, Timeout, Reserved            float64
	// Env maps each variable to the logical id its value references, or ""
	// for a literal or parameter.
	Env map[string]string
	// SQS event source.
	Queue, ResponseTypes          string
	Batch, Window, MaxConcurrency float64
	Routes                        []string // "METHOD /path AUTH"
	Schedule                      string
}

type queueModel struct {
	DLQ                            string
	MaxReceive, Visibility, Retain float64
	SSE, Retained                  bool
	RedriveAllowed                 string
}

type tableModel struct {
	Key, TTL                           string
	PITR, DeletionProtection, Retained bool
}

type deployModel struct {
	Functions map[string]*fnModel
	Queues    map[string]queueModel
	Tables    map[string]tableModel
	SESEvents []string
	// Raw SQS subscription of the feedback queue to the SES events topic.
	FeedbackSubscription string
}

func resourcesOf(tmpl map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		out[id] = r.(map[string]any)
	}
	return out
}

// envRef is the resources a variable's value references, in order and
// comma-separated ("" for a literal or a template parameter): a Ref, a
// GetAtt, a joined list of ARNs, a URL built with the API's id.
func envRef(res map[string]map[string]any, v any) string {
	var ids []string
	for _, id := range refs(render(v)) {
		if _, ok := res[id]; ok {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, ",")
}

func common(res map[string]map[string]any) deployModel {
	m := deployModel{Functions: map[string]*fnModel{}, Queues: map[string]queueModel{}, Tables: map[string]tableModel{}}
	for id, r := range res {
		p := props(r)
		switch r["Type"] {
		case "AWS::SQS::Queue":
			q := queueModel{DLQ: refID(get(p, "RedrivePolicy", "deadLetterTargetArn")), MaxReceive: num(get(p, "RedrivePolicy", "maxReceiveCount")),
				Visibility: num(p["VisibilityTimeout"]), Retain: num(p["MessageRetentionPeriod"]), SSE: p["SqsManagedSseEnabled"] == true,
				Retained: r["DeletionPolicy"] == "Retain" && r["UpdateReplacePolicy"] == "Retain"}
			if a := get(p, "RedriveAllowPolicy"); a != nil {
				q.RedriveAllowed = render(get(a, "redrivePermission")) + " " + strings.Join(strs(get(a, "sourceQueueArns")), ",")
				// CDK joins the ARN, SAM writes it with !Sub: compare the rendered text.
				q.RedriveAllowed = strings.NewReplacer("arn:${AWS::Partition}", "arn:P", "${AWS::Region}", "R", "${AWS::AccountId}", "A",
					"${AWS::StackName}", "S").Replace(q.RedriveAllowed)
			}
			m.Queues[id] = q
		case "AWS::DynamoDB::Table":
			t := tableModel{Key: render(get(p, "KeySchema")) + sortedRender(get(p, "AttributeDefinitions")) + render(get(p, "GlobalSecondaryIndexes")),
				PITR:               get(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") == true,
				DeletionProtection: p["DeletionProtectionEnabled"] == true, Retained: r["DeletionPolicy"] == "Retain"}
			if get(p, "TimeToLiveSpecification", "Enabled") == true {
				t.TTL = render(get(p, "TimeToLiveSpecification", "AttributeName"))
			}
			m.Tables[id] = t
		case "AWS::SES::ConfigurationSetEventDestination":
			m.SESEvents = strs(get(p, "EventDestination", "MatchingEventTypes"))
			sort.Strings(m.SESEvents)
		case "AWS::SNS::Subscription":
			if p["Protocol"] != "sqs" {
				continue // the alarm topic's email subscription
			}
			m.FeedbackSubscription = fmt.Sprintf("%s %v %s raw=%v", refID(p["TopicArn"]), p["Protocol"], refID(p["Endpoint"]), p["RawMessageDelivery"])
		}
	}
	return m
}

func fnFromProps(res map[string]map[string]any, p map[string]any) *fnModel {
	f := &fnModel{Runtime: render(p["Runtime"]), Handler: render(p["Handler"]), Architectures: strs(p["Architectures"]),
		Memory: num(p["MemorySize"]), Timeout: num(p["Timeout"]), LogFormat: render(get(p, "LoggingConfig", "LogFormat")),
		Env: map[string]string{}}
	if r := p["ReservedConcurrentExecutions"]; r != nil && !conditional(r) {
		f.Reserved = num(r)
	}
	for k, v := range get(p, "Environment", "Variables").(map[string]any) {
		if conditional(v) {
			continue // a variable set only with some parameters (the critic's model)
		}
		f.Env[k] = envRef(res, v)
	}
	return f
}

// conditional says whether v is !If [cond, x, !Ref AWS::NoValue]: absent
// with the template's default parameters.
func conditional(v any) bool {
	l, ok := get(v, "Fn::If").([]any)
	return ok && len(l) == 3 && get(l[2], "Ref") == "AWS::NoValue"
}

// withGlobals is a SAM function's properties with the template's
// Globals.Function applied as SAM applies them: maps merged (the
// function's keys win), anything else only where the function sets none.
func withGlobals(globals, p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range globals {
		out[k] = v
	}
	for k, v := range p {
		gm, gok := out[k].(map[string]any)
		pm, pok := v.(map[string]any)
		if gok && pok {
			out[k] = withGlobals(gm, pm)
			continue
		}
		out[k] = v
	}
	return out
}

func (f *fnModel) sqs(res map[string]map[string]any, p map[string]any) {
	f.Queue = envRef(res, p["Queue"])
	if f.Queue == "" {
		f.Queue = envRef(res, p["EventSourceArn"])
	}
	f.Batch, f.Window = num(p["BatchSize"]), num(p["MaximumBatchingWindowInSeconds"])
	f.ResponseTypes = strings.Join(strs(p["FunctionResponseTypes"]), ",")
	if mc := get(p, "ScalingConfig", "MaximumConcurrency"); mc != nil {
		f.MaxConcurrency = num(mc)
	}
}

func samModel(t *testing.T, tmpl map[string]any) deployModel {
	res := resourcesOf(tmpl)
	m := common(res)
	globals, _ := get(tmpl, "Globals", "Function").(map[string]any)
	for id, r := range res {
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		p := withGlobals(globals, props(r))
		f := fnFromProps(res, p)
		f.Tracing = render(p["Tracing"])
		events, _ := get(p, "Events").(map[string]any)
		for name, ev := range events {
			ep := get(ev, "Properties").(map[string]any)
			switch get(ev, "Type") {
			case "SQS":
				f.sqs(res, ep)
			case "HttpApi":
				auth := "NONE"
				if get(ep, "Auth", "Authorizer") == "AWS_IAM" {
					auth = "AWS_IAM"
				}
				f.Routes = append(f.Routes, fmt.Sprintf("%s %s %s", ep["Method"], ep["Path"], auth))
			case "Schedule", "ScheduleV2":
				f.Schedule = render(ep["Schedule"]) + render(ep["ScheduleExpression"])
				f.Schedule = strings.TrimSuffix(f.Schedule, "<nil>")
			default:
				t.Errorf("SAM %s: event %s of type %v not modelled", id, name, get(ev, "Type"))
			}
		}
		sort.Strings(f.Routes)
		m.Functions[id] = f
	}
	// SQS event sources are plain event source mappings (SAM's SQS event
	// would attach a managed policy allowing every queue).
	for _, r := range res {
		if r["Type"] == "AWS::Lambda::EventSourceMapping" {
			p := props(r)
			m.Functions[refID(p["FunctionName"])].sqs(res, p)
		}
	}
	return m
}

func cdkModel(t *testing.T, tmpl map[string]any) deployModel {
	res := resourcesOf(tmpl)
	m := common(res)
	integrations := map[string]string{} // integration id -> function
	for id, r := range res {
		p := props(r)
		switch r["Type"] {
		case "AWS::Lambda::Function":
			f := fnFromProps(res, p)
			f.Tracing = render(get(p, "TracingConfig", "Mode"))
			m.Functions[id] = f
		case "AWS::ApiGatewayV2::Integration":
			integrations[id] = refID(p["IntegrationUri"])
		}
	}
	for _, r := range res {
		p := props(r)
		switch r["Type"] {
		case "AWS::Lambda::EventSourceMapping":
			m.Functions[refID(p["FunctionName"])].sqs(res, p)
		case "AWS::ApiGatewayV2::Route":
			target := strings.TrimPrefix(render(p["Target"]), "integrations/")
			fn := integrations[strings.Trim(target, "${}")]
			if fn == "" {
				t.Fatalf("route %v: target %s is not a Lambda integration", p["RouteKey"], target)
			}
			m.Functions[fn].Routes = append(m.Functions[fn].Routes, fmt.Sprintf("%s %s", p["RouteKey"], p["AuthorizationType"]))
		case "AWS::Events::Rule":
			for _, tg := range p["Targets"].([]any) {
				m.Functions[refID(get(tg, "Arn"))].Schedule = render(p["ScheduleExpression"])
			}
		}
	}
	for _, f := range m.Functions {
		sort.Strings(f.Routes)
	}
	return m
}

// TestSAMTemplateAgreesWithCDK: template.yaml and the CDK stack define the
// same functions (runtime, architecture, handler, memory, timeout, tracing,
// log format, reserved concurrency), the same environment variable names
// per function referencing the same resources, the same queues with the
// same redrive policies and visibility, the same event-source batching, the
// same HTTP routes and authorization, the same schedule and tables.
func TestSAMTemplateAgreesWithCDK(t *testing.T) {
	sam := loadSAM(t)
	if sam["Transform"] != "AWS::Serverless-2016-10-31" {
		t.Errorf("template.yaml Transform = %v", sam["Transform"])
	}
	s := synth(t)
	want, got := cdkModel(t, s.tmpl), samModel(t, sam)

	if g, w := sortedKeys(got.Functions), sortedKeys(want.Functions); !reflect.DeepEqual(g, w) {
		t.Fatalf("functions: SAM %v, CDK %v", g, w)
	}
	for _, id := range sortedKeys(want.Functions) {
		diff(t, "function "+id, *got.Functions[id], *want.Functions[id])
		// sam build runs the Makefile's build-<id> target from the
		// repository root.
		r := resourcesOf(sam)[id]
		globals, _ := get(sam, "Globals", "Function").(map[string]any)
		if cu := render(get(withGlobals(globals, props(r)), "CodeUri")); cu != "." {
			t.Errorf("SAM %s: CodeUri %s, want . (the repository root, whose Makefile builds it)", id, cu)
		}
		if bm := get(r, "Metadata", "BuildMethod"); bm != "makefile" {
			t.Errorf("SAM %s: Metadata.BuildMethod %v, want makefile", id, bm)
		}
	}
	if g, w := sortedKeys(got.Queues), sortedKeys(want.Queues); !reflect.DeepEqual(g, w) {
		t.Errorf("queues: SAM %v, CDK %v", g, w)
	}
	for id, w := range want.Queues {
		diff(t, "queue "+id, got.Queues[id], w)
	}
	if g, w := sortedKeys(got.Tables), sortedKeys(want.Tables); !reflect.DeepEqual(g, w) {
		t.Errorf("tables: SAM %v, CDK %v", g, w)
	}
	for id, w := range want.Tables {
		diff(t, "table "+id, got.Tables[id], w)
	}
	// The same outputs (the CLI and docs/deploy.md use them), the alarm
	// topic's too: both templates alarm (TestSAMAlarmsAgreeWithCDK).
	diff(t, "outputs", sortedKeys(sam["Outputs"].(map[string]any)), sortedKeys(s.tmpl["Outputs"].(map[string]any)))
	diff(t, "SES event types", got.SESEvents, want.SESEvents)
	diff(t, "feedback subscription", got.FeedbackSubscription, want.FeedbackSubscription)
}

// diff reports each differing field of two values of the same struct type.
func diff(t *testing.T, what string, sam, cdk any) {
	t.Helper()
	sv, cv := reflect.ValueOf(sam), reflect.ValueOf(cdk)
	if sv.Kind() != reflect.Struct {
		if !reflect.DeepEqual(sam, cdk) {
			t.Errorf("%s:\n  SAM %v\n  CDK %v", what, sam, cdk)
		}
		return
	}
	for i := 0; i < sv.NumField(); i++ {
		a, b := sv.Field(i).Interface(), cv.Field(i).Interface()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: %s differs\n  SAM %v\n  CDK %v", what, sv.Type().Field(i).Name, a, b)
		}
	}
}

// TestSAMTemplateParses checks the YAML conversion itself on the forms the
// template uses.
func TestSAMIntrinsics(t *testing.T) {
	var doc yaml.Node
	src := "a: !Ref X\nb: !GetAtt Q.Arn\nc: !Sub \"${X}-y\"\nd: !Join [\"\", [a, !Ref Y]]\ne: 10\nf: [arm64]\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	v, err := fromYAML(&doc)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "${X}", "b": "${Q.Arn}", "c": "${X}-y", "d": "a${Y}", "e": "10", "f": "[arm64]"} {
		if got := render(get(v, k)); got != want {
			t.Errorf("%s: %s, want %s", k, got, want)
		}
	}
	if _, err := fromYAML(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!Bogus", Value: "x"}); err == nil {
		t.Error("unknown tag accepted")
	}
}

// TestSAMFeedbackSendsToNotifyQueueOnly: TestSAMTemplateAgreesWithCDK does
// not model policies, so the feedback function's queue grants are checked
// in template.yaml itself: SQSSendMessagePolicy on the notify queue (the
// transient-bounce resend), consuming its own queue, no other SQS policy
// or statement.
var consumeActions = map[string]bool{"sqs:ReceiveMessage": true, "sqs:DeleteMessage": true,
	"sqs:ChangeMessageVisibility": true, "sqs:GetQueueAttributes": true}

func TestSAMFeedbackSendsToNotifyQueueOnly(t *testing.T) {
	res := resourcesOf(loadSAM(t))
	var sends []string
	for _, pol := range props(res[FunctionID(FnFeedback)])["Policies"].([]any) {
		m, ok := pol.(map[string]any)
		if !ok {
			t.Errorf("feedback: policy %v is not a template or a statement list", pol)
			continue
		}
		for name, v := range m {
			switch {
			case name == "SQSSendMessagePolicy":
				sends = append(sends, envRef(res, get(v, "QueueName")))
			case strings.HasPrefix(name, "SQS"):
				t.Errorf("feedback: %s %v: only SQSSendMessagePolicy on the notify queue", name, v)
			case name == "Statement":
				for _, st := range v.([]any) {
					for _, a := range strs(get(st, "Action")) {
						if strings.HasPrefix(a, "sqs:") && (envRef(res, get(st, "Resource")) != QueueID(QFeedback) ||
							!consumeActions[a]) {
							t.Errorf("feedback: statement grants %s on %v", a, render(get(st, "Resource")))
						}
					}
				}
			}
		}
	}
	if !reflect.DeepEqual(sends, []string{QueueID(QNotify)}) {
		t.Errorf("feedback may send to %v, want the notify queue only (%s)", sends, QueueID(QNotify))
	}
}

// TestSAMGrantsSESAsTheStack: in template.yaml as in the CDK stack
// (TestLeastPrivilege), only notify may use SES: SendEmail, and
// GetAccount on "*" — the account's sending quota, which it paces by and
// pauses on (R-RATE-2, R-RATE-3); GetAccount acts on no resource.
func TestSAMGrantsSESAsTheStack(t *testing.T) {
	res := resourcesOf(loadSAM(t))
	for _, f := range functionSpecs {
		got := map[string][]string{}
		for _, pol := range props(res[FunctionID(f.Name)])["Policies"].([]any) {
			m, _ := pol.(map[string]any)
			sts, _ := m["Statement"].([]any)
			for _, st := range sts {
				for _, a := range strs(get(st, "Action")) {
					if strings.HasPrefix(a, "ses:") {
						got[a] = append(got[a], strs(get(st, "Resource"))...)
					}
				}
			}
		}
		if f.Name != FnNotify {
			if len(got) != 0 {
				t.Errorf("%s: SES grants %v, want none", f.Name, got)
			}
			continue
		}
		if len(got["ses:SendEmail"]) == 0 || !reflect.DeepEqual(got["ses:GetAccount"], []string{"*"}) || len(got) != 2 {
			t.Errorf("notify: SES grants %v; want ses:SendEmail on the identity and configuration set, ses:GetAccount on *", got)
		}
	}
}

// TestSAMBuildTargets: `sam build` runs the Makefile's build-<LogicalId>
// target for each function (BuildMethod makefile), which must build that
// function's bootstrap into ARTIFACTS_DIR for linux/arm64. make -n shows
// the command without building.
func TestSAMBuildTargets(t *testing.T) {
	res := resourcesOf(loadSAM(t))
	n := 0
	for id, r := range res {
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		n++
		fn := strings.ToLower(strings.TrimSuffix(id, "Function"))
		out, err := exec.Command("make", "-s", "-n", "-C", "..", "build-"+id, "ARTIFACTS_DIR=/artifacts").CombinedOutput()
		if err != nil {
			t.Errorf("make build-%s: %v\n%s", id, err, out)
			continue
		}
		cmd := string(out)
		for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "-o \"/artifacts/bootstrap\"", "./functions/" + fn} {
			if !strings.Contains(cmd, want) {
				t.Errorf("make build-%s: %q lacks %q", id, cmd, want)
			}
		}
	}
	if n != len(functionSpecs) {
		t.Errorf("%d SAM functions, want %d", n, len(functionSpecs))
	}
	// And one for real, as sam build calls it: an arm64 Linux executable
	// named bootstrap in ARTIFACTS_DIR.
	art := t.TempDir()
	if out, err := exec.Command("make", "-s", "-C", "..", "build-SweeperFunction", "ARTIFACTS_DIR="+art).CombinedOutput(); err != nil {
		t.Fatalf("make build-SweeperFunction: %v\n%s", err, out)
	}
	f, err := elf.Open(filepath.Join(art, "bootstrap"))
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC {
		t.Errorf("bootstrap: machine %v type %v, want an AArch64 executable", f.Machine, f.Type)
	}
}

// sortedRender renders a list whatever its order (CDK and SAM declare a
// table's attributes in different orders).
func sortedRender(v any) string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, render(x))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
