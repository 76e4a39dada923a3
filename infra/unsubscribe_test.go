package main

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// List hygiene (): intake verifies signed unsubscribe tokens and
// records preferences, notify mints the links and reads preferences and
// suppressions before sending, feedback records suppressions. These tests
// pin what the deployment gives each of them, in the CDK stack and in
// template.yaml.

// apiEndpoints are the HTTP API's default endpoint as the templates write
// it: the API's ApiEndpoint attribute (CDK), or the URL built from its id
// (template.yaml, like its ApiUrl output).
var apiEndpoints = []string{
	"${" + IDHTTPAPI + ".ApiEndpoint}",
	"https://${" + IDHTTPAPI + "}.execute-api.${AWS::Region}.${AWS::URLSuffix}",
}

// TestUnsubscribeKey_ReadByIntakeAndNotifyOnly: the signing key is a secret
// of its own that intake (verifies) and notify (mints) can read, and no
// other function can touch, in both templates; both get its ARN in
// CRITICIZER_SECRETS_ARN.
func TestUnsubscribeKey_ReadByIntakeAndNotifyOnly(t *testing.T) {
	s := synth(t)
	want := []string{FnIntake, FnNotify}
	var readers, touchers []string
	for _, f := range functionSpecs {
		gs := s.grants(t, f.Name)
		if slices.Contains(ids(on(gs, "secretsmanager:GetSecretValue")), IDUnsubscribeSecret) {
			readers = append(readers, f.Name)
		}
		for _, g := range gs {
			if slices.Contains(refs(g.resource), IDUnsubscribeSecret) {
				touchers = append(touchers, f.Name)
				break
			}
		}
		arns := refs(render(s.env(t, f.Name)[EnvSecretsARN]))
		if has := slices.Contains(arns, IDUnsubscribeSecret); has != slices.Contains(want, f.Name) {
			t.Errorf("CDK %s: %s references %v", f.Name, EnvSecretsARN, arns)
		}
	}
	sort.Strings(readers)
	sort.Strings(touchers)
	if !slices.Equal(readers, want) || !slices.Equal(touchers, want) {
		t.Errorf("CDK: unsubscribe key readable by %v, any grant on it for %v; want %v", readers, touchers, want)
	}

	sam := resourcesOf(loadSAM(t))
	if p := props(sam[IDUnsubscribeSecret]); get(p, "GenerateSecretString", "GenerateStringKey") != EnvUnsubscribeKey {
		t.Errorf("SAM %s: want a secret generated under the key %s, got %v", IDUnsubscribeSecret, EnvUnsubscribeKey, p)
	}
	var samReaders []string
	for _, f := range functionSpecs {
		p := props(sam[FunctionID(f.Name)])
		for _, pol := range p["Policies"].([]any) {
			if slices.Contains(refs(render(get(pol, "AWSSecretsManagerGetSecretValuePolicy", "SecretArn"))), IDUnsubscribeSecret) {
				samReaders = append(samReaders, f.Name)
			}
		}
		arns := refs(render(get(p, "Environment", "Variables", EnvSecretsARN)))
		if has := slices.Contains(arns, IDUnsubscribeSecret); has != slices.Contains(want, f.Name) {
			t.Errorf("SAM %s: %s references %v", f.Name, EnvSecretsARN, arns)
		}
	}
	sort.Strings(samReaders)
	if !slices.Equal(samReaders, want) {
		t.Errorf("SAM: unsubscribe key readable by %v, want %v", samReaders, want)
	}
}

// TestNotifyPublicURL_IsTheHTTPAPI: notify builds unsubscribe links under
// CRITICIZER_PUBLIC_URL, which must be the API that serves
// /unsubscribe/{token}: the HTTP API's endpoint ($default stage, no path
// prefix), the same URL the ApiUrl output shows, in both templates.
func TestNotifyPublicURL_IsTheHTTPAPI(t *testing.T) {
	s := synth(t)
	got := render(s.env(t, FnNotify)[EnvPublicURL])
	if !slices.Contains(apiEndpoints, got) {
		t.Errorf("CDK notify %s = %s, want one of %v", EnvPublicURL, got, apiEndpoints)
	}
	if out := render(get(s.tmpl, "Outputs", "ApiUrl", "Value")); out != got {
		t.Errorf("CDK notify %s = %s, but the ApiUrl output is %s", EnvPublicURL, got, out)
	}
	routed := false
	for _, r := range Routes {
		routed = routed || (r.Path == "/unsubscribe/{token}" && !r.IAM)
	}
	if !routed {
		t.Errorf("no public /unsubscribe/{token} route under %s", EnvPublicURL)
	}
	sam := resourcesOf(loadSAM(t))
	if g := render(get(props(sam[FunctionID(FnNotify)]), "Environment", "Variables", EnvPublicURL)); !slices.Contains(apiEndpoints, g) {
		t.Errorf("SAM notify %s = %s, want one of %v", EnvPublicURL, g, apiEndpoints)
	}
	if out := render(get(loadSAM(t), "Outputs", "ApiUrl", "Value")); !slices.Contains(apiEndpoints, out) {
		t.Errorf("SAM ApiUrl output %s, want one of %v", out, apiEndpoints)
	}
}

// TestFeedbackSuppression_UpdateItemOnJobsOnly: feedback writes SUPP#<id>
// items with UpdateItem, so on the jobs table it may do exactly that (no
// read, no put, no delete), and it is told the table's name; in both
// templates.
func TestFeedbackSuppression_UpdateItemOnJobsOnly(t *testing.T) {
	s := synth(t)
	var actions []string
	for _, g := range s.grants(t, FnFeedback) {
		if slices.Contains(refs(g.resource), IDJobsTable) && !slices.Contains(actions, g.action) {
			actions = append(actions, g.action)
		}
	}
	if !slices.Equal(actions, []string{"dynamodb:UpdateItem"}) {
		t.Errorf("CDK feedback on the jobs table: %v, want only dynamodb:UpdateItem", actions)
	}
	if ref := envRefs(s.env(t, FnFeedback)[EnvJobsTable]); ref != IDJobsTable {
		t.Errorf("CDK feedback %s references %q, want %s", EnvJobsTable, ref, IDJobsTable)
	}

	sam := resourcesOf(loadSAM(t))
	p := props(sam[FunctionID(FnFeedback)])
	actions = nil
	for _, pol := range p["Policies"].([]any) {
		m, _ := pol.(map[string]any)
		for kind, v := range m {
			if kind != "Statement" {
				// A SAM policy template: only the deliveries table's.
				if slices.Contains(refs(render(v)), IDJobsTable) {
					t.Errorf("SAM feedback: policy template %s on the jobs table", kind)
				}
				continue
			}
			for _, st := range v.([]any) {
				if !slices.Contains(refs(render(get(st, "Resource"))), IDJobsTable) {
					continue
				}
				actions = append(actions, strs(get(st, "Action"))...)
			}
		}
	}
	if !slices.Equal(actions, []string{"dynamodb:UpdateItem"}) {
		t.Errorf("SAM feedback on the jobs table: %v, want only dynamodb:UpdateItem", actions)
	}
	if ref := envRef(sam, get(p, "Environment", "Variables", EnvJobsTable)); ref != IDJobsTable {
		t.Errorf("SAM feedback %s references %q, want %s", EnvJobsTable, ref, IDJobsTable)
	}
}

// TestNoDependencyCycle: CloudFormation refuses a template whose resources
// reference one another in a cycle, and synth does not check it. notify's
// CRITICIZER_PUBLIC_URL makes notify depend on the API; the API must not
// depend on notify (it integrates intake only).
func TestNoDependencyCycle(t *testing.T) {
	s := synth(t)
	for name, res := range map[string]map[string]map[string]any{
		"CDK": resourcesOf(s.tmpl),
		// The SAM template before its transform: a function's HttpApi event
		// references the API here, where the transformed API references the
		// function instead; either way there must be no cycle.
		"SAM": resourcesOf(loadSAM(t)),
	} {
		deps := dependencies(res)
		if !slices.Contains(deps[FunctionID(FnNotify)], IDHTTPAPI) {
			t.Errorf("%s: notify does not depend on the API (%v): is the test looking at the right graph?", name, deps[FunctionID(FnNotify)])
		}
		if c := cycle(deps); c != nil {
			t.Errorf("%s: dependency cycle %s", name, strings.Join(c, " -> "))
		}
	}
}

// TestCycleDetector: the detector above finds a cycle through references
// and DependsOn, and passes an acyclic graph.
func TestCycleDetector(t *testing.T) {
	res := map[string]map[string]any{
		"Api":    {"Properties": map[string]any{"Target": map[string]any{"Fn::GetAtt": []any{"Intake", "Arn"}}}},
		"Intake": {"Properties": map[string]any{"Role": map[string]any{"Ref": "AWS::Region"}}},
		"Notify": {"Properties": map[string]any{"Url": map[string]any{"Fn::Sub": "https://${Api}.example/${AWS::Region}"}}},
	}
	if c := cycle(dependencies(res)); c != nil {
		t.Errorf("acyclic graph: cycle %v", c)
	}
	res["Intake"]["DependsOn"] = []any{"Notify"}
	if c := cycle(dependencies(res)); len(c) != 4 {
		t.Errorf("Api -> Intake -> Notify -> Api: got %v", c)
	}
}

// dependencies maps each resource to the resources it references or
// depends on.
func dependencies(res map[string]map[string]any) map[string][]string {
	deps := map[string][]string{}
	for id, r := range res {
		var out []string
		collectRefs(r["Properties"], &out)
		out = append(out, strs(r["DependsOn"])...)
		for _, d := range out {
			if _, ok := res[d]; ok && !slices.Contains(deps[id], d) {
				deps[id] = append(deps[id], d)
			}
		}
	}
	return deps
}

// cycle returns a dependency cycle (its first id repeated at the end), or
// nil.
func cycle(deps map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path, found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		switch state[id] {
		case open:
			i := slices.Index(path, id)
			found = append(slices.Clone(path[i:]), id)
			return false
		case done:
			return true
		}
		state[id] = open
		path = append(path, id)
		for _, d := range deps[id] {
			if !visit(d) {
				return false
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return true
	}
	for _, id := range sortedKeys(deps) {
		if !visit(id) {
			return found
		}
	}
	return nil
}

// collectRefs appends the logical ids a CloudFormation value references
// (Ref, Fn::GetAtt, Fn::Sub's ${X} and ${X.Attr}), anywhere inside it.
func collectRefs(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, a := range x {
			switch k {
			case "Ref":
				if s, ok := a.(string); ok {
					*out = append(*out, s)
				}
				continue
			case "Fn::GetAtt":
				switch g := a.(type) {
				case string:
					*out = append(*out, strings.SplitN(g, ".", 2)[0])
				case []any:
					if len(g) > 0 {
						*out = append(*out, render(g[0]))
					}
				}
				continue
			case "Fn::Sub":
				tmpl := a
				if l, ok := a.([]any); ok && len(l) > 0 {
					tmpl = l[0]
					collectRefs(l[1:], out)
				}
				if s, ok := tmpl.(string); ok {
					*out = append(*out, refs(s)...)
				}
				continue
			}
			collectRefs(a, out)
		}
	case []any:
		for _, e := range x {
			collectRefs(e, out)
		}
	}
}
