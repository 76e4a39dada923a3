package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The SES account's maximum send rate is deploy-time context (default 14,
// SES's rate for a new production account); notify gets it as
// CRITICIZER_MAX_SEND_RATE, and a value that is not a whole number >= 0 is
// refused before anything is synthesized.
func TestMaxSendRateContext(t *testing.T) {
	for _, bad := range []string{"-1", "fast", "2.5"} {
		if _, err := buildWith(t, map[string]any{CtxMaxSendRate: bad}); err == nil || !strings.Contains(err.Error(), CtxMaxSendRate) {
			t.Errorf("%s=%q: err %v; want a refusal naming the key", CtxMaxSendRate, bad, err)
		}
	}
	if testing.Short() {
		t.Skip("second synth")
	}
	tmpl, err := buildWith(t, map[string]any{CtxMaxSendRate: "40"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct{ Properties map[string]any }
	}
	if err := json.Unmarshal([]byte(tmpl), &doc); err != nil {
		t.Fatal(err)
	}
	env, _ := get(doc.Resources[FunctionID(FnNotify)].Properties, "Environment", "Variables").(map[string]any)
	if env[EnvMaxSendRate] != "40" {
		t.Fatalf("notify %s = %v, want 40", EnvMaxSendRate, env[EnvMaxSendRate])
	}
}
