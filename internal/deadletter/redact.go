package deadletter

import (
	"regexp"
	"strings"
)

// Redact removes secrets and raw email addresses from s, replacing each with
// "[REDACTED:<kind>]" (emails with HashEmail, so the same address can still
// be correlated across envelopes without being stored).
//
// It covers: private key PEM blocks; Authorization, Proxy-Authorization,
// Cookie and Set-Cookie header values; X-Hub-Signature(-256) headers and
// sha1=/sha256= hex signatures; AWS secret access keys and session tokens
// after their labels; token=, api_key=, apikey, password=, secret=,
// signature= style labels (quoted or not, JSON or header style); Bearer and
// Basic credentials; JWTs; AWS access key ids; GitHub, Slack and sk- API
// keys; URL userinfo; URL query values named like token, key, sig,
// signature, secret, password, credential or code; and email addresses.
//
// All patterns are RE2 (linear time in len(s)). Redact is idempotent:
// Redact(Redact(s)) == Redact(s). It over-redacts rather than under-redacts:
// a word after "token:" in an error message is lost, which is the price of
// never storing a token.
func Redact(s string) string {
	// A single pass is idempotent for every input we know of; the extra
	// passes make that a guarantee for adversarial inputs in which a
	// replacement completes a pattern that an earlier rule has already
	// scanned past. Each pass is linear, so the whole is linear.
	const maxPasses = 4
	for range maxPasses {
		next := redactOnce(s)
		if next == s {
			break
		}
		s = next
	}
	return s
}

func redactOnce(s string) string {
	lower := strings.ToLower(s)
	for _, r := range rules {
		if !r.mayMatch(lower) {
			continue
		}
		if next := r.apply(s); next != s {
			s, lower = next, strings.ToLower(next)
		}
	}
	if !strings.Contains(s, "@") {
		return s
	}
	return redactEmails(s)
}

// rule is one redaction pattern. The last capture group of re is the secret
// span, replaced by the marker; everything else in the match is kept so the
// redacted text still says what was there ("password=[REDACTED:password]").
// If re has two groups, the first names the label and picks the kind.
type rule struct {
	kind  string
	hints []string // lower-case substrings, one of which every match contains
	re    *regexp.Regexp
}

// mayMatch is a cheap prefilter: most text contains none of a rule's hints,
// and a substring search is much faster than running the regexp.
func (r rule) mayMatch(lower string) bool {
	for _, h := range r.hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

const markerPrefix = "[REDACTED:"

func marker(kind string) string { return markerPrefix + kind + "]" }

// isMarker reports whether s is exactly one marker. Rules skip such spans,
// which keeps them from re-matching their own output.
func isMarker(s string) bool {
	if !strings.HasPrefix(s, markerPrefix) || !strings.HasSuffix(s, "]") {
		return false
	}
	kind := s[len(markerPrefix) : len(s)-1]
	if kind == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

func (r rule) apply(s string) string {
	matches := r.re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		g := len(m)/2 - 1 // last group
		start, end := m[2*g], m[2*g+1]
		if start < 0 || start == end || isMarker(s[start:end]) {
			continue
		}
		kind := r.kind
		if g == 2 && m[2] >= 0 {
			kind = labelKind(s[m[2]:m[3]])
		}
		b.WriteString(s[last:start])
		b.WriteString(marker(kind))
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// labelKind maps a matched label ("client_secret", "X-Api-Key") to a kind.
func labelKind(label string) string {
	l := strings.ToLower(label)
	switch {
	case strings.Contains(l, "pass"):
		return "password"
	case strings.Contains(l, "secret"):
		return "secret"
	case strings.Contains(l, "token"):
		return "token"
	case strings.Contains(l, "sig"):
		return "signature"
	case strings.Contains(l, "key"):
		return "api_key"
	case strings.Contains(l, "bearer"):
		return "bearer"
	case strings.Contains(l, "basic"):
		return "basic"
	}
	return "secret"
}

// Pattern fragments. Text in error messages is often JSON- or %q-encoded,
// once or twice, so quotes may be preceded by any number of backslashes,
// a line break may be the two characters \n, and '&' may be \u0026.
const (
	// lb is a left word boundary that also accepts an escaped line break
	// before the word (\b would not: "\nBearer" has no boundary at 'B').
	lb = `(?:\A|[^A-Za-z0-9_]|\\[nrt])`
	// labelSep joins a label to its value: optional closing quote, ':' or '='.
	labelSep = `\\*["']?\s*[:=]\s*`
	// openQuote is an optional opening quote before a value.
	openQuote = `(?:\\*["'])?`
	// secretLabels are generic labels whose value is a secret.
	secretLabels = `(?i)(token|api[_-]?key|apikey|password|passwd|secret|signature)`
	// querySep starts a URL query parameter.
	querySep = `(?:[?&]|\\u0026|&amp;)`
)

var rules = []rule{
	// PEM private keys, also unterminated ones cut off by truncation.
	{"private_key", []string{"private key"}, regexp.MustCompile(`(-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----|\z))`)},
	// Whole header values up to the end of the line or a quote.
	{"authorization", []string{"authorization"}, regexp.MustCompile(`(?i)` + lb + `(?:proxy-)?authorization` + labelSep + openQuote + `([^\r\n"'\\]+)`)},
	{"cookie", []string{"cookie"}, regexp.MustCompile(`(?i)` + lb + `(?:set-)?cookie` + labelSep + openQuote + `([^\r\n"'\\]+)`)},
	// Webhook signatures. "body_sha256=<hex>" is a content hash, not a
	// signature, hence the boundary.
	{"signature", []string{"x-hub-signature"}, regexp.MustCompile(`(?i)x-hub-signature(?:-256)?` + labelSep + openQuote + `([^\s"',;\\]+)`)},
	{"signature", []string{"sha1=", "sha256="}, regexp.MustCompile(`(?i)` + lb + `sha(?:1|256)=([0-9a-f]{16,})`)},
	// AWS secret keys and session tokens, after their labels.
	{"aws_secret", []string{"key", "token"}, regexp.MustCompile(`(?i)(?:secret[_-]?access[_-]?key|session[_-]?token|security[_-]?token)` + labelSep + openQuote + `([A-Za-z0-9/+=]+)`)},
	// Generic labels: quoted values first (they may contain spaces).
	{"secret", []string{"token", "key", "pass", "secret", "signature"}, regexp.MustCompile(secretLabels + labelSep + `"((?:[^"\\\r\n]|\\.)+)"`)},
	{"secret", []string{"token", "key", "pass", "secret", "signature"}, regexp.MustCompile(secretLabels + labelSep + `'([^'\r\n]+)'`)},
	{"secret", []string{"token", "key", "pass", "secret", "signature"}, regexp.MustCompile(secretLabels + labelSep + openQuote + `([^\s"'&,;\\]+)`)},
	// HTTP auth schemes outside a labelled header.
	{"bearer", []string{"bearer", "basic"}, regexp.MustCompile(`(?i)` + lb + `(bearer|basic)\s+([A-Za-z0-9._~+/-]+=*)`)},
	// Self-identifying token formats.
	{"jwt", []string{"eyj"}, regexp.MustCompile(`(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)`)},
	{"aws_access_key_id", []string{"akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"}, regexp.MustCompile(`((?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16})`)},
	{"github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	{"slack_token", []string{"xox"}, regexp.MustCompile(`(xox[abposr]-[A-Za-z0-9-]+)`)},
	{"api_key", []string{"sk-"}, regexp.MustCompile(lb + `(sk-[A-Za-z0-9_-]{16,})`)},
	// URL credentials.
	{"userinfo", []string{"://"}, regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://([^\s/?#@]+)@`)},
	{"url_param", []string{"="}, regexp.MustCompile(`(?i)` + querySep + `(?:[a-z0-9_.-]*[_.-])?(?:token|key|apikey|sig|signature|secret|password|passwd|credential|code)=([^&#\s"'<>\\]+)`)},
}
