// Package redact removes secrets and email addresses from text before it
// is logged, stored in a dead letter, used in a metric or shown: the one
// place that knows what a secret looks like (R-PRIVACY-1). No library fits:
// secret scanners (gitleaks, trufflehog) find secrets in files to report
// them, and are neither linear-time on every log line nor idempotent
// replacers; this package is both.
package redact

import (
	"regexp"
	"strings"
)

// Text removes secrets and email addresses from s, replacing each secret
// with "[REDACTED:<kind>]" and each address with its pseudonym (Email), so
// the same address can still be correlated across log lines and envelopes
// without being stored.
//
// Its contract is R-PRIVACY-3. It covers: private key PEM blocks;
// Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// X-Hub-Signature(-256), X-Gitlab-Token and webhook-signature header
// values; sha1=/sha256= hex signatures and Standard Webhooks v1,
// signatures; AWS secret access keys and session tokens, labelled or bare;
// token=, api_key=, apikey, password=, secret=, signature=, auth= style
// labels (quoted or not, JSON or header style); Bearer and Basic
// credentials; JWTs; AWS access key ids; GitHub, GitLab, Slack, OpenAI
// (sk-), Stripe, Standard Webhooks (whsec_) and Google (AIza) keys; in
// every URL its userinfo, every query value and path segments shaped like
// secrets; and email addresses in every form an RFC 5322/6532 parser
// accepts (quoted local parts, non-ASCII, IDN domains, IP literals) and
// the looser forms mail systems send (dots anywhere in a local part), also
// written with a full-width at sign or %40.
//
// All patterns are RE2 or linear scans (linear time in len(s)). Text is
// idempotent: Text(Text(s)) == Text(s). It over-redacts rather than
// under-redacts: a word after "token:" in an error message is lost, which is
// the price of never storing a token.
func Text(s string) string {
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
	// A PEM block spans lines; every other pattern is within one, so the
	// rules run line by line, and each line's prefilter skips the rules it
	// cannot match (a stack trace is many lines, few of them suspicious).
	if pemRule.mayMatch(strings.ToLower(s)) {
		s = pemRule.apply(s)
	}
	if strings.IndexByte(s, '\n') >= 0 {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = redactLine(l)
		}
		s = strings.Join(lines, "\n")
	} else {
		s = redactLine(s)
	}
	if strings.Contains(s, "://") {
		s = scrubURLs(s)
	}
	s = redactBase64Runs(s)
	return redactEmails(s)
}

func redactLine(s string) string {
	lower := strings.ToLower(s)
	for _, r := range rules {
		if !r.mayMatch(lower) {
			continue
		}
		if next := r.apply(s); next != s {
			s, lower = next, strings.ToLower(next)
		}
	}
	return s
}

// redactBase64Runs replaces runs of base64 characters that are secrets by
// their shape alone: exactly 40 with both cases (a bare AWS secret access
// key; a hex digest or a base32 id is one case and stays), or 100 or more
// with both cases (an AWS session token, a signed blob: nothing a reader
// needs in a log line is one). A byte scan, not a regexp: it runs on every
// log line.
func redactBase64Runs(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		upper, lower := false, false
		for j < len(s) && isB64(s[j]) {
			upper = upper || (s[j] >= 'A' && s[j] <= 'Z')
			lower = lower || (s[j] >= 'a' && s[j] <= 'z')
			j++
		}
		end := j
		for end < len(s) && end-j < 2 && s[end] == '=' {
			end++
		}
		n := j - i
		// A run glued to '-', '_' or '.' is part of a larger word (an id,
		// a file name): left alone.
		glued := (i > 0 && strings.IndexByte("-_.", s[i-1]) >= 0) || (end < len(s) && strings.IndexByte("-_.", s[end]) >= 0)
		if upper && lower && !glued && (n == 40 || n >= 100) {
			kind := "aws_secret"
			if n >= 100 {
				kind = "token"
			}
			b.WriteString(s[last:i])
			b.WriteString(marker(kind))
			last = end
		}
		i = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
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
	secretLabels = `(?i)(token|api[_-]?key|apikey|password|passwd|secret|signature|auth)`
	// b64 is a character of standard base64.
	b64 = `[A-Za-z0-9/+]`
	// querySep starts a URL query parameter.
	querySep = `(?:[?&]|\\u0026|&amp;)`
)

// pemRule matches PEM private keys, also unterminated ones cut off by
// truncation; it runs on the whole text, the others line by line.
var pemRule = rule{kind: "private_key", hints: []string{"private key"}, re: regexp.MustCompile(`(-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----|\z))`)}

var rules = []rule{
	// Whole header values up to the end of the line or a quote.
	{kind: "authorization", hints: []string{"authorization"}, re: regexp.MustCompile(`(?i)` + lb + `(?:proxy-)?authorization` + labelSep + openQuote + `([^\r\n"'\\]+)`)},
	{kind: "cookie", hints: []string{"cookie"}, re: regexp.MustCompile(`(?i)` + lb + `(?:set-)?cookie` + labelSep + openQuote + `([^\r\n"'\\]+)`)},
	// Webhook signatures and tokens. "body_sha256=<hex>" is a content
	// hash, not a signature, hence the boundary.
	{kind: "signature", hints: []string{"x-hub-signature"}, re: regexp.MustCompile(`(?i)x-hub-signature(?:-256)?` + labelSep + openQuote + `([^\s"',;\\]+)`)},
	{kind: "signature", hints: []string{"webhook-signature"}, re: regexp.MustCompile(`(?i)webhook-signature` + labelSep + openQuote + `([^\r\n"'\\]+)`)},
	{kind: "token", hints: []string{"x-gitlab-token"}, re: regexp.MustCompile(`(?i)x-gitlab-token` + labelSep + openQuote + `([^\s"',;\\]+)`)},
	{kind: "signature", hints: []string{"v1,"}, re: regexp.MustCompile(lb + `v1,(` + b64 + `{20,}={0,2})`)},
	{kind: "signature", hints: []string{"sha1=", "sha256="}, re: regexp.MustCompile(`(?i)` + lb + `sha(?:1|256)=([0-9a-f]{16,})`)},
	// AWS secret keys and session tokens, after their labels.
	{kind: "aws_secret", hints: []string{"key", "token"}, re: regexp.MustCompile(`(?i)(?:secret[_-]?access[_-]?key|session[_-]?token|security[_-]?token)` + labelSep + openQuote + `([A-Za-z0-9/+=]+)`)},
	// Generic labels: quoted values first (they may contain spaces).
	{kind: "secret", hints: labelHints, re: regexp.MustCompile(secretLabels + labelSep + `"((?:[^"\\\r\n]|\\.)+)"`)},
	{kind: "secret", hints: labelHints, re: regexp.MustCompile(secretLabels + labelSep + `'([^'\r\n]+)'`)},
	{kind: "secret", hints: labelHints, re: regexp.MustCompile(secretLabels + labelSep + openQuote + `([^\s"'&,;\\]+)`)},
	// HTTP auth schemes outside a labelled header.
	{kind: "bearer", hints: []string{"bearer", "basic"}, re: regexp.MustCompile(`(?i)` + lb + `(bearer|basic)\s+([A-Za-z0-9._~+/-]+=*)`)},
	// Self-identifying token formats.
	{kind: "jwt", hints: []string{"eyj"}, re: regexp.MustCompile(`(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)`)},
	{kind: "aws_access_key_id", hints: []string{"akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"}, re: regexp.MustCompile(`((?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16})`)},
	{kind: "github_token", hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, re: regexp.MustCompile(`((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	// GitLab personal, deploy, trigger, runner, OAuth, feed and CI job
	// tokens (glpat-, gldt-, glptt-, glrt-, gloas-, glft-, glcbt-...).
	{kind: "gitlab_token", hints: []string{"gl"}, re: regexp.MustCompile(lb + `(gl[a-z]{2,5}-[A-Za-z0-9_-]{20,})`)},
	{kind: "slack_token", hints: []string{"xox"}, re: regexp.MustCompile(`(xox[abposr]-[A-Za-z0-9-]+)`)},
	{kind: "api_key", hints: []string{"sk-"}, re: regexp.MustCompile(lb + `(sk-[A-Za-z0-9_-]{16,})`)},
	{kind: "stripe_key", hints: []string{"_live_", "_test_"}, re: regexp.MustCompile(lb + `((?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,})`)},
	{kind: "webhook_secret", hints: []string{"whsec_"}, re: regexp.MustCompile(`(whsec_` + b64 + `{8,}={0,2})`)},
	{kind: "google_api_key", hints: []string{"aiza"}, re: regexp.MustCompile(`(AIza[0-9A-Za-z_-]{35})`)},
	// Query values named like secrets in URLs without a scheme (an HTTP
	// request line); absolute URLs lose every query value (scrubURLs).
	{kind: "url_param", hints: []string{"="}, re: regexp.MustCompile(`(?i)` + querySep + `(?:[a-z0-9_.-]*[_.-])?(?:token|key|apikey|sig|signature|secret|password|passwd|credential|code|auth)=([^&#\s"'<>\\]+)`)},
}

// labelHints prefilter the generic label rules.
var labelHints = []string{"token", "key", "pass", "secret", "signature", "auth"}
