package deadletter

import (
	"github.com/criticizer/criticizer/internal/redact"
	"regexp"
	"strings"
)

// sensitiveKeyParts are key-name fragments that mark a value as secret or as
// content (R-STAGE-4: no secrets, tokens, API keys, full prompts or raw
// PII). Matching is by substring on the lower-cased key, so "api_key",
// "prompt_text" and "recipient_email" all match. "key" is deliberately broad:
// an idempotency key embeds the recipient.
var sensitiveKeyParts = []string{
	"prompt", "body", "diff", "patch", "completion",
	"email", "recipient",
	"token", "secret", "password", "passwd", "credential", "signature",
	"authorization", "cookie", "key",
}

// hashValue is what a hash-named key ("idempotency_key_sha256",
// "body_sha256", "recipient_hash") must hold to be kept despite a sensitive
// name: a hex digest, optionally prefixed.
var hashValue = regexp.MustCompile(`^(?:sha256:|email:)?[0-9a-fA-F]{8,128}$`)

// SanitizeContext returns a copy of ctx safe for sanitized_context (R-STAGE-4):
// entries whose key suggests a secret or content are dropped unless the key
// names a hash and the value is one; remaining values are redacted and
// truncated to 256 bytes; keys that are too long or that would themselves be
// redacted are dropped. The result is never nil.
func SanitizeContext(ctx map[string]string) map[string]string {
	out := make(map[string]string, len(ctx))
	for k, v := range ctx {
		if k == "" || len(k) > maxContextKey || redact.Text(k) != k {
			continue
		}
		if sensitiveKey(k) && !(hashKey(k) && hashValue.MatchString(v)) {
			continue
		}
		out[k] = clean(v, maxContextValue)
	}
	return out
}

func sensitiveKey(k string) bool {
	l := strings.ToLower(k)
	for _, p := range sensitiveKeyParts {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

func hashKey(k string) bool {
	l := strings.ToLower(k)
	return strings.HasSuffix(l, "_sha256") || strings.HasSuffix(l, "_hash") ||
		strings.HasSuffix(l, "_digest")
}
