package webhook

import "testing"

// Where a reviewer event's idempotency key is a header the source's
// authentication does not cover, the event says so, and intake remembers
// its body too: GitHub's X-GitHub-Delivery (the HMAC covers the body
// only) and GitLab's Idempotency-Key or event UUID beside a secret token
// (the token covers nothing). A signed GitLab request's key is its
// webhook-id, which the signature covers, and Gerrit's is made of the
// event itself (change, patch set, type, time): a replay of either
// carries the same key, so neither is marked.
// Rules: R-BUDGET-3.
func TestKeyUnsigned_OnlyWhereTheAuthenticationMissesTheKey(t *testing.T) {
	tests := []struct {
		name string
		p    interface{ ParseEvent(Request) (Event, error) }
		r    Request
		want bool
	}{
		{"github", ghAdapter, ghRequest("pull_request", ghFixture(t, "pull_request.review_requested.json"), nil), true},
		{"gitlab token", glTokenAdapter, glRequest(glFixture(t, "merge_request.update-reviewers.json"), nil), true},
		{"gitlab signed", glSignedAdapter, glSigned(t, glFixture(t, "merge_request.update-reviewers.json"), glTestNow, nil), false},
		{"gerrit", grAdapter, grRequest(grFixture(t, "reviewer-added.json"), nil), false},
	}
	for _, tt := range tests {
		ev, err := tt.p.ParseEvent(tt.r)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !ev.ReviewersOnly {
			t.Fatalf("%s: not a reviewer event: %+v", tt.name, ev)
		}
		if ev.KeyUnsigned != tt.want {
			t.Errorf("%s: KeyUnsigned %v, want %v", tt.name, ev.KeyUnsigned, tt.want)
		}
	}
}
