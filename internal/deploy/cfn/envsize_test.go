package cfn_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// jsonLen is the bytes s takes inside a JSON string, as Lambda measures.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	// encoding/json escapes <, > and & as \u003c…; Lambda need not: count
	// them as one byte, the others as encoding/json writes them.
	n := len(b) - 2
	n -= 5 * (strings.Count(s, "<") + strings.Count(s, ">") + strings.Count(s, "&"))
	return n
}

// worst is the value of p that takes the most JSON bytes: the longest its
// constraints allow, made of the costliest characters its pattern admits
// (a control character, then non-ASCII, then a quote or backslash), in
// one of a few shapes (a URL, an address) a pattern may ask for.
func worst(t *testing.T, p deploy.Param) string {
	t.Helper()
	if len(p.Allowed) > 0 {
		best := ""
		for _, a := range p.Allowed {
			if len(a) > len(best) {
				best = a
			}
		}
		return best
	}
	if p.Number {
		if len(strconv.Itoa(p.Min)) > len(strconv.Itoa(p.Max)) {
			return strconv.Itoa(p.Min)
		}
		return strconv.Itoa(p.Max)
	}
	best, cost := "", -1
	for _, fill := range []string{"\u0001", "\u4e16", "\u00e9", `"`, `\`, "a", "9", "."} {
		for _, shape := range [][2]string{{"", ""}, {"https://", ""}, {"a@", ""}, {"", "@a"}, {"", "<a@b>"}, {"a.", ""}, {"", "9"}} {
			n := p.MaxLength - len([]rune(shape[0]+shape[1]))
			if n < 0 {
				continue
			}
			v := shape[0] + strings.Repeat(fill, n) + shape[1]
			if p.Check(v) == nil && jsonLen(v) > cost {
				best, cost = v, jsonLen(v)
			}
		}
	}
	if cost < 0 {
		t.Fatalf("%s: no value of the longest length matches %s: give its pattern a shape the test knows", p.Name, p.Pattern)
	}
	return best
}

// worstValues are every parameter at its worst: the CDK app's context at
// its maximum, with critic as the critic.
func worstValues(t *testing.T, d deploy.Deployment, critic string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range d.Parameters {
		out[p.Name] = worst(t, p)
	}
	out["Critic"] = critic
	// Only for sam local invoke, not deployed: its variables are SAM's
	// Globals, which a deployed function does not get.
	out["LocalStackHost"] = ""
	return out
}

// Every function's environment fits Lambda's 4 KB in both renderings for
// every value a parameter permits: template.yaml with each parameter at
// its bound (its longest, in the costliest characters its pattern
// admits), and the CDK app's template with every context value at its
// worst, for each critic. Each parameter's bound is at least what its
// worst value takes, so a pattern that admits costlier characters than
// the parameter declares fails here. Rules: R-LIMIT-1.
func TestEnvironmentSize_WorstCaseInBothRenderings(t *testing.T) {
	d := deploy.Describe()
	bounds := cfn.ParamBounds(d)
	for _, p := range d.Parameters {
		if w := worst(t, p); jsonLen(w) > bounds[p.Name] {
			t.Errorf("%s: %q takes %d bytes, over its declared bound %d (Chars: its pattern admits costlier characters)", p.Name, w, jsonLen(w), bounds[p.Name])
		}
	}
	sam, err := cfn.SAM(d)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := cfn.EnvironmentSizes(sam, bounds, map[string]bool{"Local": false})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != len(d.Functions) {
		t.Fatalf("sized %d functions, want %d", len(sizes), len(d.Functions))
	}
	for _, sz := range sizes {
		t.Logf("template.yaml at the parameters' bounds: %-16s %5d bytes (biggest %s, %d)", sz.Function, sz.Bytes, sz.Biggest, sz.BiggestBytes)
	}
	if err := cfn.CheckEnvironments(sizes); err != nil {
		t.Errorf("template.yaml: %v", err)
	}
	for _, critic := range []string{"offline", "bedrock", "openai"} {
		tpl, err := cfn.CDK(d, worstValues(t, d, critic))
		if err != nil {
			t.Fatalf("CDK at the worst context, critic %s: %v", critic, err)
		}
		sizes, err := cfn.EnvironmentSizes(tpl, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			t.Logf("CDK at the worst context, critic %-7s: %-16s %5d bytes", critic, sz.Function, sz.Bytes)
		}
		if err := cfn.CheckEnvironments(sizes); err != nil {
			t.Errorf("CDK, critic %s: %v", critic, err)
		}
	}
}

// The sizing counts as Lambda does: one JSON object of names and values,
// escaped; a reference at the longest value AWS allows it; a condition
// both ways when undecided. Rules: R-LIMIT-1.
func TestEnvironmentSize_CountsAsLambdaMeasures(t *testing.T) {
	d := deploy.Describe()
	tpl, err := cfn.CDK(d, map[string]string{"MailFrom": `"Q\R" <a@b.example>`})
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := cfn.EnvironmentSizes(tpl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range sizes {
		if sz.Function != deploy.FunctionID(deploy.FnNotify) {
			continue
		}
		// The same length without quotes or backslashes.
		base, err := cfn.CDK(d, map[string]string{"MailFrom": "AQARA <a@b.example>"})
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := cfn.EnvironmentSizes(base, nil, nil)
		for _, b := range bs {
			if b.Function == sz.Function && sz.Bytes-b.Bytes != 3 {
				t.Errorf("a sender with two quotes and a backslash sized %d bytes more than one of plain characters of the same length, want 3 (each escape is one byte more)", sz.Bytes-b.Bytes)
			}
		}
		return
	}
	t.Fatal("no notify function sized")
}

// A secret the template leaves unnamed is sized as CloudFormation names
// it (its logical id, a hyphen, 12 random characters; the stack's name in
// front as well, to be safe): notify's two secret ARNs then fit its 4 KB.
// A named secret is sized at Secrets Manager's 512 characters.
// Rules: R-LIMIT-1, R-DEPLOY-5.
func TestEnvironmentSize_UnnamedSecretAsCloudFormationNamesIt(t *testing.T) {
	d := deploy.Describe()
	size := func(name string) int {
		t.Helper()
		sam, err := cfn.SAM(d)
		if err != nil {
			t.Fatal(err)
		}
		if name != "" {
			sam.Resources().Get(deploy.IDNotifySecret).(*cfn.Map).Get("Properties").(*cfn.Map).Set("Name", name)
		}
		sizes, err := cfn.EnvironmentSizes(sam, cfn.ParamBounds(d), map[string]bool{"Local": false})
		if err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			if sz.Function == deploy.FunctionID(deploy.FnNotify) {
				return sz.Bytes
			}
		}
		t.Fatal("no notify function sized")
		return 0
	}
	unnamed, named := size(""), size("criticizer-notify")
	// arn:{partition}:secretsmanager:{region}:{account}:secret:{stack}-NotifySecret-{12}-{6}
	generated := len("arn:") + 16 + len(":secretsmanager:") + 25 + len(":") + 12 + len(":secret:") +
		128 + len("-") + len(deploy.IDNotifySecret) + len("-") + 12 + len("-XXXXXX")
	maxARN := len("arn:") + 16 + len(":secretsmanager:") + 25 + len(":") + 12 + len(":secret:") + 512 + len("-XXXXXX")
	if named-unnamed != maxARN-generated {
		t.Errorf("a named NotifySecret sizes notify %d bytes more than an unnamed one, want %d", named-unnamed, maxARN-generated)
	}
	if unnamed > cfn.LambdaEnvLimit {
		t.Errorf("notify's environment can reach %d bytes", unnamed)
	}
	t.Logf("notify: %d bytes with its secrets unnamed, %d with NotifySecret named (sized at 512 characters)", unnamed, named)
}
