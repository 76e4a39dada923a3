package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// samParams is template.yaml's parameters at their longest: each value
// (for the conditions) and its bytes in the environment (for the sizes). A
// String is its MaxLength of ASCII letters, or its longest AllowedValue; a
// Number its MaxValue. A parameter with no bound is reported, not guessed.
// Free text is sized as plain ASCII: a quote, backslash, control character
// or non-ASCII character takes more once escaped, which template.yaml
// cannot refuse (CloudFormation counts characters) and Lambda then
// refuses at deploy — docs/deploy.md says so.
func samParams(tmpl map[string]any) (values map[string]string, bounds map[string]int, unbounded []string) {
	values, bounds = map[string]string{}, map[string]int{}
	params, _ := tmpl["Parameters"].(map[string]any)
	for name, p := range params {
		p := p.(map[string]any)
		switch {
		case p["AllowedValues"] != nil:
			longest := ""
			for _, v := range p["AllowedValues"].([]any) {
				if s := fmt.Sprint(v); len(s) > len(longest) {
					longest = s
				}
			}
			values[name] = longest
		case p["Type"] == "Number" && p["MaxValue"] != nil:
			values[name] = fmt.Sprint(p["MaxValue"])
		case p["Type"] == "String" && p["MaxLength"] != nil:
			values[name] = strings.Repeat("a", int(num(p["MaxLength"])))
		default:
			unbounded = append(unbounded, name)
			values[name] = fmt.Sprint(p["Default"])
			continue
		}
		bounds[name] = jsonStringLen(values[name])
	}
	sort.Strings(unbounded)
	return values, bounds, unbounded
}

// evalCondition decides a template condition for parameter values.
func evalCondition(t *testing.T, conds map[string]any, v any, values map[string]string) bool {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("condition %v: not modelled", v)
	}
	value := func(x any) string {
		if r, ok := x.(map[string]any); ok {
			return values[fmt.Sprint(r["Ref"])]
		}
		return fmt.Sprint(x)
	}
	for fn, arg := range m {
		switch fn {
		case "Condition":
			return evalCondition(t, conds, conds[arg.(string)], values)
		case "Fn::Not":
			return !evalCondition(t, conds, arg.([]any)[0], values)
		case "Fn::Equals":
			l := arg.([]any)
			return value(l[0]) == value(l[1])
		case "Fn::And", "Fn::Or":
			all, some := true, false
			for _, c := range arg.([]any) {
				on := evalCondition(t, conds, c, values)
				all, some = all && on, some || on
			}
			return map[bool]bool{true: all, false: some}[fn == "Fn::And"]
		}
	}
	t.Fatalf("condition %v: not modelled", v)
	return false
}

// TestSAMEnvironmentSize_AtParameterMaxima: deployed from template.yaml
// with every parameter at its longest (and each critic in turn), every
// function's environment fits Lambda's 4 KB with every resource name at
// AWS's maximum; the figures are docs/deploy.md's. A parameter an
// environment reads must have a bound (MaxLength, AllowedValues, MaxValue).
// Rules: R-LIMIT-1.
func TestSAMEnvironmentSize_AtParameterMaxima(t *testing.T) {
	tmpl := loadSAM(t)
	values, bounds, unbounded := samParams(tmpl)
	res := resourcesOf(tmpl)
	types := map[string]string{}
	for id, r := range res {
		types[id] = fmt.Sprint(r["Type"])
	}
	conds, _ := tmpl["Conditions"].(map[string]any)
	globals, _ := get(tmpl, "Globals", "Function").(map[string]any)
	worst := map[string]envSize{}
	for _, critic := range []string{"offline", "bedrock", "openai"} {
		values["Critic"], values["LocalStackHost"] = critic, "" // deployed, not sam local
		b := envBounds{types: types, params: bounds, conds: map[string]bool{}}
		for name, c := range conds {
			b.conds[name] = evalCondition(t, conds, c, values)
		}
		for _, f := range functionSpecs {
			p := withGlobals(globals, props(res[FunctionID(f.Name)]))
			vars, _ := get(p, "Environment", "Variables").(map[string]any)
			sz, err := b.size(f.Name, vars)
			if err != nil {
				t.Errorf("critic %s: %v (unbounded parameters: %v)", critic, err, unbounded)
				continue
			}
			if sz.Bytes > LambdaEnvLimit {
				t.Errorf("template.yaml, critic %s: %s's environment can reach %d bytes, over %d; the biggest variable is %s (%d bytes)",
					critic, f.Name, sz.Bytes, LambdaEnvLimit, sz.Biggest, sz.BiggestBytes)
			}
			if sz.Bytes > worst[f.Name].Bytes {
				worst[f.Name] = sz
			}
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range functionSpecs {
		row := fmt.Sprintf("| %s | %s |", f.Name, comma(worst[f.Name].Bytes))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/deploy.md lacks the SAM row %q", row)
		}
	}
}
