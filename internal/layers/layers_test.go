package layers_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/layers"
)

// No package of this module imports one the package map forbids it
// (docs/architecture.md), read from `go list -json` of every package.
// Rules: R-LAYER-1, R-LAYER-2, R-WIRE-2.
func TestLayers_NoForbiddenImport(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the module")
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps", layers.Module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []layers.Package
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p layers.Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	// A rule naming a package that is not there (renamed, moved) would
	// pass for ever: each pattern of this module must match a package,
	// but for those another branch is adding (notify's own
	// package): drop them here once they are merged.
	arriving := []string{"internal/notify/..."}
	for _, r := range layers.Rules() {
		for _, pat := range append(append(append([]string{}, r.From...), r.Except...), r.Forbid...) {
			if strings.HasPrefix(pat, "github.com/") || slices.Contains(arriving, pat) {
				continue
			}
			if !slices.ContainsFunc(pkgs, func(p layers.Package) bool { return layers.Match(pat, p.ImportPath) }) {
				t.Errorf("%s: %s matches no package of the module", r.Name, pat)
			}
		}
	}
	for _, bad := range layers.Check(layers.Rules(), pkgs) {
		t.Error(bad)
	}
}

// Each rule reports an import it forbids and keeps quiet about the
// packages it excepts: a rule that could not fail would prove nothing.
// Rules: R-LAYER-1, R-LAYER-2.
func TestLayers_EachRuleCanFail(t *testing.T) {
	abs := func(pat string) string {
		pat = strings.TrimSuffix(pat, "/...")
		if !strings.Contains(strings.SplitN(pat, "/", 2)[0], ".") {
			pat = layers.Module + "/" + pat
		}
		return pat
	}
	for _, r := range layers.Rules() {
		// A package the rule's first pattern covers, importing one its
		// last forbidden pattern names.
		below := func(pat, name string) string {
			if strings.HasSuffix(pat, "/...") {
				return abs(pat) + "/" + name
			}
			return abs(pat)
		}
		from, to := below(r.From[0], "x"), below(r.Forbid[len(r.Forbid)-1], "y")
		p := layers.Package{ImportPath: from, Imports: []string{"fmt", to}, Deps: []string{"fmt", to}}
		if got := layers.Check([]layers.Rule{r}, []layers.Package{p}); len(got) != 1 || !strings.Contains(got[0], r.Name) {
			t.Errorf("%s: %s importing %s reported %q, want one violation", r.Name, from, to, got)
		}
		for _, ex := range r.Except {
			p.ImportPath = abs(ex)
			if got := layers.Check([]layers.Rule{r}, []layers.Package{p}); len(got) != 0 {
				t.Errorf("%s: the excepted %s reported %q", r.Name, ex, got)
			}
		}
	}
	// The example, spelled out: the delivery rules importing the
	// SES client.
	p := layers.Package{ImportPath: layers.Module + "/internal/delivery",
		Deps: []string{"github.com/aws/aws-sdk-go-v2/service/sesv2", "github.com/aws/smithy-go"}}
	if got := layers.Check(layers.Rules(), []layers.Package{p}); len(got) != 1 || !strings.HasPrefix(got[0], "internal/delivery links github.com/aws/aws-sdk-go-v2/service/sesv2 and 1 more") {
		t.Errorf("internal/delivery linking the SES client and smithy reported %q, want one violation naming both", got)
	}
	// The stages encoding an attribute value themselves (R-LAYER-2).
	av := "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	p = layers.Package{ImportPath: layers.Module + "/internal/pipeline", Imports: []string{av}, Deps: []string{av}}
	if got := layers.Check(layers.Rules(), []layers.Package{p}); len(got) != 1 || !strings.Contains(got[0], "name no stored attribute") {
		t.Errorf("internal/pipeline importing attributevalue reported %q, want one violation", got)
	}
	// The contracts importing an AWS package, and a stage or the notify
	// package linking DynamoDB through the driver (R-LAYER-2).
	p = layers.Package{ImportPath: layers.Module + "/internal/store", Imports: []string{"context", "github.com/aws/smithy-go"}}
	if got := layers.Check(layers.Rules(), []layers.Package{p}); len(got) != 1 || !strings.Contains(got[0], "contracts import no AWS package") {
		t.Errorf("internal/store importing smithy reported %q, want one violation", got)
	}
	for _, from := range []string{"internal/pipeline", "internal/notify", "internal/api", "internal/store/memstore"} {
		p = layers.Package{ImportPath: layers.Module + "/" + from, Imports: []string{layers.Module + "/internal/store/dynamo"},
			Deps: []string{layers.Module + "/internal/store/dynamo", "github.com/aws/aws-sdk-go-v2/service/dynamodb"}}
		if got := layers.Check(layers.Rules(), []layers.Package{p}); len(got) != 1 || !strings.Contains(got[0], from+" links github.com/aws/aws-sdk-go-v2/service/dynamodb") {
			t.Errorf("%s linking the DynamoDB driver reported %q, want one violation", from, got)
		}
	}
	// A prefix is not a parent: internal/storex is not under internal/store.
	p = layers.Package{ImportPath: layers.Module + "/internal/storex", Deps: []string{layers.Module + "/internal/api"}}
	if got := layers.Check(layers.Rules(), []layers.Package{p}); len(got) != 0 {
		t.Errorf("internal/storex reported %q", got)
	}
}
