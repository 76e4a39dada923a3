package main

import (
	"bytes"
	"strings"
	"testing"
)

// make explore fails when a scenario stops at its state cap before its
// bounds were explored: nothing is proved of the states it did not
// reach, so it must not read as a pass. The same scenario with room
// passes.
func TestRun_IncompleteScenarioFails(t *testing.T) {
	var out bytes.Buffer
	err := run(&out, options{only: "superseded", variant: "as-built", shallow: true, maxStates: 50})
	if err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("a scenario stopped at 50 states: error %v, want incomplete\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "INCOMPLETE: superseded stopped at 50 states") {
		t.Errorf("the output does not say which scenario stopped:\n%s", out.String())
	}
	out.Reset()
	if err := run(&out, options{only: "superseded", variant: "as-built", shallow: true, maxStates: 2_000_000}); err != nil {
		t.Fatalf("with room: %v\n%s", err, out.String())
	}
}
