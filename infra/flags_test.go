package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// recommendedFlags is the feature flags the pinned aws-cdk-lib recommends
// (cx-api's CURRENTLY_RECOMMENDED_FLAGS, what `cdk init` writes), read
// from the library's tarball in the Go module cache with Node (which jsii
// already needs).
func recommendedFlags(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-cdk-go/awscdk/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	tgz, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "jsii", "aws-cdk-lib-*.tgz"))
	if len(tgz) != 1 {
		t.Fatalf("aws-cdk-lib tarball: %v", tgz)
	}
	dir := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", tgz[0], "-C", dir, "package/cx-api").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, b)
	}
	js := `const f=require(process.argv[1]);process.stdout.write(JSON.stringify(Object.assign({},f.NEW_PROJECT_DEFAULT_CONTEXT,f.CURRENTLY_RECOMMENDED_FLAGS)))`
	b, err := exec.Command("node", "-e", js, filepath.Join(dir, "package", "cx-api", "lib", "features.js")).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var flags map[string]any
	if err := json.Unmarshal(b, &flags); err != nil {
		t.Fatal(err)
	}
	return flags
}

// cdk.json sets every feature flag the pinned CDK recommends, at its
// recommended value, so synth warns of no unconfigured flag and the
// template does not change under a CDK upgrade's defaults. Upgrading
// aws-cdk-go fails this test until cdk.json is regenerated (docs/deploy.md).
func TestFeatureFlags_AllRecommendedConfigured(t *testing.T) {
	if _, err := os.Stat("cdk.json"); err != nil {
		t.Fatal(err)
	}
	ctx, err := cdkJSONContext()
	if err != nil {
		t.Fatal(err)
	}
	var missing, differ []string
	for k, want := range recommendedFlags(t) {
		got, ok := ctx[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !reflect.DeepEqual(got, want):
			differ = append(differ, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(differ)
	if len(missing)+len(differ) > 0 {
		t.Errorf("cdk.json: %d recommended flags unconfigured %v; %d at another value %v", len(missing), missing, len(differ), differ)
	}
}
