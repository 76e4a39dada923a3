package critic

import (
	"fmt"
	"regexp"
	"strings"
)

// secretPattern recognises one kind of credential.
type secretPattern struct {
	// what describes the credential in the message; it is fixed text, so
	// the message never contains the secret itself.
	what string
	// hints are substrings of which a match must contain at least one
	// (compared case-insensitively when fold is set); the regexp runs only
	// when one is present.
	hints []string
	fold  bool
	// quoted says a match always contains a quoted string literal, a
	// second cheap filter that rules out most lines of code.
	quoted bool
	re     *regexp.Regexp
	// valueGroup, when non-zero, is the submatch holding the secret value,
	// which is checked against placeholders before reporting.
	valueGroup int
	// skipTests exempts test files, whose fixtures routinely assign fake
	// passwords; token formats with a fixed shape are flagged everywhere.
	skipTests bool
	// inPaths also masks this pattern in file names shown in findings.
	inPaths bool
}

// secretPatterns lists what checkSecrets looks for. Formats follow the
// vendors' documented token shapes.
var secretPatterns = []secretPattern{
	{
		what:    "AWS access key id",
		hints:   []string{"AKIA", "ASIA"},
		re:      regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		inPaths: true,
	},
	{
		what:  "private key",
		hints: []string{"PRIVATE KEY"},
		re:    regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`),
	},
	{
		what:    "GitHub token",
		hints:   []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re:      regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`),
		inPaths: true,
	},
	{
		what:    "Slack token",
		hints:   []string{"xox"},
		re:      regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`),
		inPaths: true,
	},
	{
		what:    "Google API key",
		hints:   []string{"AIza"},
		re:      regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
		inPaths: true,
	},
	{
		what:    "Stripe live key",
		hints:   []string{"_live_"},
		re:      regexp.MustCompile(`\b[rs]k_live_[0-9A-Za-z]{20,}`),
		inPaths: true,
	},
	{
		what:       "password in a URL",
		hints:      []string{"://"},
		re:         regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@"']+:([^/\s:@"']{3,})@[A-Za-z0-9\[]`),
		valueGroup: 1,
	},
	{
		what:   "hard-coded password, secret or token",
		hints:  []string{"pass", "secret", "token", "key"},
		fold:   true,
		quoted: true,
		re: regexp.MustCompile(`(?i)(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret)` +
			`["']?\s*(?::=|=>|=|:)\s*["']([^"'\s]{6,})["']`),
		valueGroup: 1,
		skipTests:  true,
	},
}

// mayMatch is the cheap pre-check before running the regexp.
func (p *secretPattern) mayMatch(s string) bool {
	if p.quoted && strings.IndexByte(s, '"') < 0 && strings.IndexByte(s, '\'') < 0 {
		return false
	}
	for _, h := range p.hints {
		if p.fold && containsFold(s, h) || !p.fold && strings.Contains(s, h) {
			return true
		}
	}
	return false
}

// checkSecrets flags credential-shaped strings in added lines. A secret
// that reaches a repository must be treated as leaked, so this is an error
// whatever the file, generated ones included.
func checkSecrets(_ *config, f *changedFile, c *collector) {
	for l := range f.addedLines() {
		for i := range secretPatterns {
			p := &secretPatterns[i]
			if (p.skipTests && f.test) || !p.mayMatch(l.Text) {
				continue
			}
			if !p.matches(l.Text) {
				continue
			}
			c.add(f, l.NewLine, SeverityError, RuleHardcodedSecret,
				fmt.Sprintf("possible %s; remove it, rotate the credential, and load it from a secret store instead", p.what))
		}
	}
}

// matches reports whether text contains a real-looking instance of p.
func (p *secretPattern) matches(text string) bool {
	if p.valueGroup == 0 {
		return p.re.MatchString(text)
	}
	for _, m := range p.re.FindAllStringSubmatch(text, -1) {
		if !isPlaceholder(m[p.valueGroup]) {
			return true
		}
	}
	return false
}

// placeholderWords mark values that are documentation, not credentials.
var placeholderWords = []string{
	"example", "placeholder", "changeme", "change_me", "change-me", "dummy", "redacted",
	"xxxx", "****", "your", "sample", "fake",
}

// isPlaceholder recognises template variables and obvious dummy values, to
// keep the rule from crying wolf on configuration templates.
func isPlaceholder(v string) bool {
	if v == "" || strings.ContainsAny(v[:1], "$%<{*") {
		return true
	}
	for _, w := range placeholderWords {
		if containsFold(v, w) {
			return true
		}
	}
	return strings.Count(v, v[:1]) == len(v) // "aaaaaa"
}
