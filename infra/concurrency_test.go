package main

import "testing"

// TestLLMEventSourceCapsConcurrency: llm's event source polls with at most
// LLMMaxConcurrency (3) invocations in both templates, as notify's does
// with 5: a burst of reviews cannot take the account's concurrency quota
// (10 on a new account) or the model's tokens-per-minute quota.
// Rules: R-LIMIT-4.
func TestLLMEventSourceCapsConcurrency(t *testing.T) {
	if LLMMaxConcurrency != 3 {
		t.Errorf("LLMMaxConcurrency = %d; docs/deploy.md's quota arithmetic assumes 3", LLMMaxConcurrency)
	}
	want := map[string]float64{QLLM: LLMMaxConcurrency, QNotify: float64(notifyMaxConcurrency())}
	// Every capped source together leaves room on an account at the
	// default quota of 10 for the uncapped functions (intake above all).
	if total := want[QLLM] + want[QNotify]; total > 10-2 {
		t.Errorf("llm %v + notify %v = %v concurrent invocations; an account quota of 10 must keep 2 for intake and the rest",
			want[QLLM], want[QNotify], total)
	}
	s := synth(t)
	for q, mc := range want {
		if got := num(get(props(s.esmOf(t, QueueID(q))), "ScalingConfig", "MaximumConcurrency")); got != mc {
			t.Errorf("CDK: %s's event source MaximumConcurrency = %v, want %v", q, got, mc)
		}
	}
	sam := resourcesOf(loadSAM(t))
	for q, mc := range want {
		found := false
		for id, r := range sam {
			if r["Type"] != "AWS::Lambda::EventSourceMapping" || refID(get(r, "Properties", "EventSourceArn")) != QueueID(q) {
				continue
			}
			found = true
			if got := num(get(r, "Properties", "ScalingConfig", "MaximumConcurrency")); got != mc {
				t.Errorf("template.yaml %s: MaximumConcurrency = %v, want %v", id, got, mc)
			}
		}
		if !found {
			t.Errorf("template.yaml: no event source mapping for %s", QueueID(q))
		}
	}
}
