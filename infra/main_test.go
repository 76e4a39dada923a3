package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/criticizer/criticizer/internal/deploy"
)

// The tests synthesize the stack once (the jsii runtime and aws-cdk-lib
// load in a Node child process, seconds each time) and share it. They need
// Node, not the CDK CLI, nor `make build`: the assets are dummy bootstrap
// files in a temporary directory.

// testMailFrom is the sender the shared synth is configured with.
const testMailFrom = "Criticizer Reviews <critic@reviews.example.org>"

func TestMain(m *testing.M) {
	// JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 cannot be set from
	// here: jsii-runtime-go starts its Node process during package
	// initialization (every generated package's init() registers its types
	// with the kernel), before TestMain runs, and the Node process checks the
	// variable once at start. Set it in the environment of `go test` (the
	// Makefile's infra-test target does); without it Node 20 only prints a
	// warning banner.
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	jsii.Close()
	os.Exit(code)
}

type synthesized struct {
	stack       *Stack
	template    assertions.Template
	annotations assertions.Annotations
	// tmpl is the CloudFormation template as JSON values.
	tmpl map[string]any
}

// shared is the stack synthesized once with the test's sender and
// otherwise the defaults.
var (
	shared struct {
		*synthesized
		dir, assets string
		err         error
	}
	sharedOnce sync.Once
)

// synthWith synthesizes the app with cdk.json's context and extra, into
// dir.
func synthWith(dir string, extra map[string]any) (*synthesized, error) {
	ctx, err := cdkJSONContext()
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		ctx[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out")), Context: &ctx})
	st, err := Build(app, deploy.StackName, nil)
	if err != nil {
		return nil, err
	}
	s := &synthesized{stack: st, template: assertions.Template_FromStack(st.Stack, nil), annotations: assertions.Annotations_FromStack(st.Stack)}
	raw, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		return nil, err
	}
	return s, json.Unmarshal(raw, &s.tmpl)
}

// dummyAssets writes <dir>/<fn>/bootstrap for every function.
func dummyAssets(dir string) error {
	for _, f := range deploy.Describe().Functions {
		if err := os.MkdirAll(filepath.Join(dir, f.Name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name, "bootstrap"), []byte("#!/bin/sh\n# test asset for "+f.Name+"\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// synth returns the shared synthesized stack.
func synth(t testing.TB) *synthesized {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "criticizer-infra-test-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		assets := filepath.Join(dir, "assets")
		if shared.err = dummyAssets(assets); shared.err != nil {
			return
		}
		shared.assets = assets
		shared.synthesized, shared.err = synthWith(dir, map[string]any{CtxAssetDir: assets, "mailFrom": testMailFrom})
	})
	if shared.err != nil {
		t.Fatalf("synth: %v", shared.err)
	}
	return shared.synthesized
}

func (s *synthesized) resource(t testing.TB, id string) map[string]any {
	t.Helper()
	r, ok := s.tmpl["Resources"].(map[string]any)[id].(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	return r
}

// get walks a JSON value by keys (strings) and indexes (ints).
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// render turns a CloudFormation value into a readable string: Ref X is
// ${X}, GetAtt X.Y is ${X.Y}, Fn::Join concatenates, Fn::Sub keeps its
// template. It is how the tests compare resources across templates.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64, bool, int:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		if len(x) == 1 {
			for k, a := range x {
				switch k {
				case "Ref":
					return "${" + render(a) + "}"
				case "Fn::GetAtt":
					if l, ok := a.([]any); ok && len(l) == 2 {
						return "${" + render(l[0]) + "." + render(l[1]) + "}"
					}
					return "${" + render(a) + "}"
				case "Fn::Join":
					l := a.([]any)
					items, _ := l[1].([]any)
					parts := make([]string, len(items))
					for i, e := range items {
						parts[i] = render(e)
					}
					return strings.Join(parts, render(l[0]))
				case "Fn::Sub":
					if s, ok := a.(string); ok {
						return s
					}
				}
			}
		}
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func strs(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []string{x}
	case map[string]any:
		return []string{render(x)}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, render(e))
		}
		return out
	}
	return nil
}

// cdkJSONContext is cdk.json's context (the feature flags): the CLI hands
// it to the app, so the tests synthesize with it too, or they would check
// a template other than the one deployed.
func cdkJSONContext() (map[string]any, error) {
	b, err := os.ReadFile("cdk.json")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("cdk.json: %w", err)
	}
	if doc.Context == nil {
		doc.Context = map[string]any{}
	}
	return doc.Context, nil
}
