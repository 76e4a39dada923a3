package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cfnLint runs cfn-lint (on the machine image; CI has it) over a template.
func cfnLint(t *testing.T, path string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is not installed (pip install cfn-lint, or the Debian package): %v", err)
	}
	out, err := exec.Command(bin, append(args, "--", path)...).CombinedOutput()
	if err != nil {
		t.Errorf("cfn-lint %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// The CDK app's synthesized template lints clean, at the defaults and at
// the worst context (template.yaml is linted by internal/deploy/cfn).
func TestCfnLint_CDKTemplate(t *testing.T) {
	for name, s := range map[string]*synthesized{"defaults": synth(t), "worst": synthBedrock(t)} {
		b, err := json.Marshal(s.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name+".template.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfnLint(t, p)
	}
}
