package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// worstContext is every parameter's context key at the value that takes
// the most bytes its constraints allow (printable ASCII parameters filled
// with quotes, the others with their longest value), with the bedrock
// critic.
func worstContext(t testing.TB) map[string]any {
	t.Helper()
	ctx := map[string]any{}
	for _, p := range deploy.Describe().Parameters {
		if p.SAMOnly {
			continue
		}
		var v string
		switch {
		case len(p.Allowed) > 0:
			for _, a := range p.Allowed {
				if len(a) > len(v) {
					v = a
				}
			}
		case p.Number:
			v = strconv.Itoa(p.Max)
		default:
			for _, c := range []string{`"`, "a", "9", "."} {
				for _, shape := range [][2]string{{"", ""}, {"https://", ""}, {"a@", ""}, {"", "@a"}, {"", "<a@b>"}, {"", "9"}} {
					n := p.MaxLength - len(shape[0]) - len(shape[1])
					if n < 0 {
						continue
					}
					w := shape[0] + strings.Repeat(c, n) + shape[1]
					if p.Check(w) == nil && len(strconv.Quote(w)) > len(strconv.Quote(v)) {
						v = w
					}
				}
			}
		}
		if err := p.Check(v); err != nil {
			t.Fatalf("%s: no worst value: %v", p.Name, err)
		}
		ctx[p.ContextKey()] = v
	}
	ctx["critic"], ctx["criticModel"] = "bedrock", "global."+strings.Repeat("a", 93)
	return ctx
}

var (
	bedrockOnce sync.Once
	bedrock     *synthesized
	bedrockErr  error
)

// synthBedrock is the stack synthesized with the worst context.
func synthBedrock(t testing.TB) *synthesized {
	t.Helper()
	synth(t) // shared.dir and shared.assets
	bedrockOnce.Do(func() {
		ctx := worstContext(t)
		ctx[CtxAssetDir] = shared.assets
		bedrock, bedrockErr = synthWith(filepath.Join(shared.dir, "worst"), ctx)
	})
	if bedrockErr != nil {
		t.Fatalf("synth at the worst context: %v", bedrockErr)
	}
	return bedrock
}

// The stack the CDK app synthesizes is the rendering of the description
// with its context: every resource of it, each function's code its asset,
// no placeholder left, and each function's environment within Lambda's
// 4 KB with every context value at its worst (the synth refuses one that
// is not). Rules: R-LIMIT-1.
func TestStack_IsTheRenderingWithAssets(t *testing.T) {
	for name, s := range map[string]*synthesized{"defaults": synth(t), "worst": synthBedrock(t)} {
		res := s.tmpl["Resources"].(map[string]any)
		for _, id := range s.stack.Template.Resources().Keys() {
			if _, ok := res[id]; !ok {
				t.Errorf("%s: the rendering's %s is not in the stack", name, id)
			}
		}
		b, _ := json.Marshal(s.tmpl)
		if strings.Contains(string(b), cfn.CodePlaceholder) {
			t.Errorf("%s: a function's code is still the placeholder", name)
		}
		for _, f := range deploy.Describe().Functions {
			code := get(res, deploy.FunctionID(f.Name), "Properties", "Code")
			if !strings.Contains(render(get(code, "S3Key")), ".zip") || get(code, "S3Bucket") == nil {
				t.Errorf("%s: %s's code is %v, want its asset", name, f.Name, code)
			}
		}
		sizes, err := cfn.EnvironmentSizes(s.stack.Template, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			t.Logf("%s: %-16s %5d bytes", name, sz.Function, sz.Bytes)
			if sz.Bytes > cfn.LambdaEnvLimit {
				t.Errorf("%s: %s's environment reaches %d bytes", name, sz.Function, sz.Bytes)
			}
		}
	}
	if got := get(synthBedrock(t).tmpl, "Resources", deploy.FunctionID(deploy.FnLLM), "Properties", "Environment", "Variables", "CRITICIZER_BEDROCK_MODEL_ID"); got == nil {
		t.Error("the worst context did not reach llm's environment")
	}
}

// A context value template.yaml's parameter would refuse is refused at
// synth, naming the context key: the same constraints in both.
func TestContext_RefusedAsTheParameterWould(t *testing.T) {
	synth(t) // shared.dir and shared.assets
	for key, v := range map[string]string{"notifyReservedConcurrency": "3", "critic": "gpt", "llmMaxFindings": "51",
		"allowedRecipientDomains": strings.Repeat("a", 1025), "mailFrom": "not an address"} {
		dir := filepath.Join(shared.dir, "refused-"+key)
		_, err := synthWith(dir, map[string]any{CtxAssetDir: shared.assets, key: v})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("-c %s=%.20q: %v, want refused naming %s", key, v, err, key)
		}
	}
	if _, err := synthWith(filepath.Join(shared.dir, "nomodel"), map[string]any{CtxAssetDir: shared.assets, "critic": "bedrock"}); err == nil {
		t.Error("-c critic=bedrock without criticModel synthesized")
	}
	if _, err := synthWith(filepath.Join(shared.dir, "noassets"), map[string]any{CtxAssetDir: filepath.Join(shared.dir, "none")}); err == nil ||
		!strings.Contains(err.Error(), "make build") {
		t.Errorf("no assets: %v, want a hint to make build", err)
	}
}
