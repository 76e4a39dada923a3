package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The operator's CLI links neither the functions' wiring (internal/wire/...)
// nor the HTTP handler (internal/api), nor the local stack: it reads and
// repairs a deployment through the store and the queues, and finds the
// local stack's ports in internal/devstack/ports. Read from `go list -deps`.
// Rules: R-WIRE-2.
func TestCLI_LinksNoFunctionWiring(t *testing.T) {
	if testing.Short() {
		t.Skip("go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const root = "github.com/criticizer/criticizer/internal/"
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, root)
		if !ok {
			continue
		}
		if rel == "api" || rel == "wire" || strings.HasPrefix(rel, "wire/") ||
			rel == "devstack" || rel == "fault" || rel == "chaos" {
			t.Errorf("cmd/criticizer links %s", p)
		}
	}
}
