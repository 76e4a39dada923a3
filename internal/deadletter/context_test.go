package deadletter

import (
	"github.com/criticizer/criticizer/internal/redact/redacttest"
	"strings"
	"testing"
)

// R-STAGE-4: "sanitized_context: sanitized operational context (request IDs,
// stage, attempt counts, upstream response code, truncated payload
// hashes/IDs)" and rule 1: it "MUST exclude secrets, access tokens, API keys,
// full prompts containing sensitive data, and raw PII".
func TestSanitizeContext_DropsRedactsTruncates(t *testing.T) {
	in := map[string]string{
		"request_id":             "r-1",
		"upstream_status":        "503",
		"idempotency_key_sha256": "ab12cd34ef56ab12",
		"body_sha256":            strings.Repeat("a", 64),
		"email_sha256":           "not-a-hash@example.com",
		"idempotency_key":        "cl-1|alice@example.com|3",
		"prompt":                 plantPrompt,
		"prompt_tokens":          "1200",
		"diff":                   plantDiff,
		"raw_body":               "{}",
		"recipient":              redacttest.PlantEmail,
		"Session-Token":          "x",
		"client_secret":          "y",
		"db_password":            "z",
		"Authorization":          "Bearer q",
		"cookie":                 "c=1",
		"api_key":                "k",
		"detail":                 "failed for " + redacttest.PlantEmail + " with token=" + redacttest.PlantToken,
		"long":                   strings.Repeat("x", 1000),
		redacttest.PlantAWSKeyID: "key-as-a-key-name",
	}
	out := SanitizeContext(in)
	want := map[string]bool{"request_id": true, "upstream_status": true, "idempotency_key_sha256": true, "body_sha256": true, "detail": true, "long": true}
	for k := range out {
		if !want[k] {
			t.Errorf("kept %q = %q", k, out[k])
		}
	}
	for k := range want {
		if _, ok := out[k]; !ok {
			t.Errorf("dropped %q", k)
		}
	}
	if got := out["detail"]; strings.Contains(got, redacttest.PlantEmail) || strings.Contains(got, redacttest.PlantToken) {
		t.Errorf("detail not redacted: %q", got)
	}
	if len(out["long"]) > 256 {
		t.Errorf("long value is %d bytes", len(out["long"]))
	}
	if SanitizeContext(nil) == nil {
		t.Error("SanitizeContext(nil) = nil, want empty map")
	}
}
