package redact

import (
	"hash/fnv"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/redact/redacttest"
)

// The contract of R-PRIVACY-3, written out from docs/rules.md rather than
// from the redactor's code: the fuzz target checks the rule, not whatever
// the implementation happens to do.
var (
	// contractAddress is an address: a quoted local part or a run of local
	// part characters (dots anywhere), an at sign in one of its three
	// spellings, and an address literal or a domain of labels joined by
	// dots. Which domains name a host is decided by contractHost.
	contractAddress = regexp.MustCompile(
		`(?:"(?P<quoted>[^"]{0,64})"|[\p{L}\p{Nd}\p{M}.!#$%&'*+/=?^_` + "`" + `{|}~-]+)` +
			`(?:@|＠|%40)` +
			`(?P<domain>\[[^\]]*\]|[\p{L}\p{Nd}\p{M}-]+(?:\.[\p{L}\p{Nd}\p{M}-]+)*)`)
	// goVersion and digest are the two '@' suffixes that are not hosts.
	goVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(?:[-+.][0-9A-Za-z.+-]*)?$`)
	digest    = regexp.MustCompile(`^sha(?:1|256|512)$`)
	// wordTLD is a last label of two or more letters.
	wordTLD = regexp.MustCompile(`\.\p{L}{2,}$`)

	// contractTokens are the keys and tokens R-PRIVACY-3 names by their
	// own shape: none may appear in redacted text, whatever surrounds it.
	// A left boundary (bound) is part of the shape where the rule says so.
	bound          = `(?:\A|[^A-Za-z0-9_]|\\[nrt])`
	contractTokens = map[string]*regexp.Regexp{
		"private key block": regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----`),
		"AWS access key id": regexp.MustCompile(`(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}`),
		"GitHub token":      regexp.MustCompile(`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20}|github_pat_[A-Za-z0-9_]{20}`),
		"GitLab token":      regexp.MustCompile(bound + `gl[a-z]{2,5}-[A-Za-z0-9_-]{20}`),
		"Slack token":       regexp.MustCompile(`xox[abposr]-[A-Za-z0-9-]`),
		"OpenAI key":        regexp.MustCompile(bound + `sk-[A-Za-z0-9_-]{16}`),
		"Stripe key":        regexp.MustCompile(bound + `(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10}`),
		"webhook secret":    regexp.MustCompile(`whsec_[A-Za-z0-9/+]{8}`),
		"Google API key":    regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`),
		"JWT":               regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.`),
		// On the same line: the redactor reads lines (a credential is one
		// header's value); "Bearer" ending a line is a word, not a scheme.
		"HTTP credentials": regexp.MustCompile(`(?i)` + bound + `(?:bearer|basic)[\t\f\r ]+[A-Za-z0-9._~+/-]`),
	}
)

// contractHost reports whether a domain names a host: an address literal
// of at most 64 bytes, or a domain with a letter that is neither a Go
// module version nor a digest name, unless its last label is a word.
func contractHost(d string) bool {
	if strings.HasPrefix(d, "[") {
		return len(d)-2 <= 64
	}
	if !strings.ContainsFunc(d, unicode.IsLetter) {
		return false
	}
	return wordTLD.MatchString(d) || !(goVersion.MatchString(d) || digest.MatchString(d))
}

// contractAddressIn finds the first address R-PRIVACY-3 says is in s. A
// candidate that is not one (a module version, a quoted part too long) is
// passed by one character, not by its length, so it hides nothing inside.
func contractAddressIn(s string) string {
	quoted, domain := contractAddress.SubexpIndex("quoted"), contractAddress.SubexpIndex("domain")
	for pos := 0; pos < len(s); {
		m := contractAddress.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			return ""
		}
		q := m[2*quoted] >= 0 && m[2*quoted+1]-m[2*quoted] > 64
		if !q && contractHost(s[pos+m[2*domain]:pos+m[2*domain+1]]) {
			return s[pos+m[0] : pos+m[1]]
		}
		_, size := utf8.DecodeRuneInString(s[pos+m[0]:])
		pos += m[0] + size
	}
	return ""
}

// R-PRIVACY-3: for any text, the redacted text holds no address and no
// key or token of a self-identifying shape; the planted corpus of every
// secret kind survives in no surrounding text; redaction is a fixed point
// (re-redacting stored text changes nothing) and keeps valid UTF-8 valid:
// what R-PRIVACY-1 relies on.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"", "a@b.cc", "a@b.cc@d.ee", "x@v1.2.3_y@z.com", "x@v1.2.3-a.com",
		"token=token=abc", "https://a:b@c@d.com", "password=[REDACTED:password]x",
		"Bearer eyJa.eyJb.c", "-----BEGIN PRIVATE KEY-----", "a.@b.cc.", "ghp_" + strings.Repeat("A", 30) + "@x.io",
		`"password":"a\"b c"`, "email:0123456789ab@x.io", "\"q\"@x.io", "ü＠ß.de", "a%40b.c",
		"https://h/p?x=[REDACTED:url_param]&y=1#f", "v1,AAAA", "glpat-" + strings.Repeat("x", 25),
		"..@x.org", "a@[IPv6:2001:db8:ffff:ffff:ffff:ffff:255.255.255.255]", "x%40y@b.cc",
	} {
		f.Add(s, s)
	}
	// Each input redacts one planted item, chosen by a hash of the input,
	// in its context: the whole corpus on every input cost about a second
	// an input under the fuzzer's instrumentation (50 inputs in 35 s).
	// TestRedact_EveryKind holds the whole corpus at once.
	items := redacttest.Items()
	literals := redacttest.Literals()
	f.Fuzz(func(t *testing.T, prefix, suffix string) {
		h := fnv.New32a()
		h.Write([]byte(prefix + "\x00" + suffix))
		item := items[h.Sum32()%uint32(len(items))]
		out := Text(prefix + "\n" + item + "\n" + suffix)
		for _, lit := range literals {
			if strings.Contains(item, lit) && strings.Contains(out, lit) && !strings.Contains(prefix+suffix, lit) {
				t.Fatalf("planted %q survived with prefix %q and suffix %q", lit, prefix, suffix)
			}
		}
		for _, s := range []string{prefix, suffix} {
			o := Text(s)
			if a := contractAddressIn(o); a != "" {
				t.Fatalf("address %q in Text(%q) = %q", a, s, o)
			}
			for kind, re := range contractTokens {
				if m := re.FindString(o); m != "" {
					t.Fatalf("%s %q in Text(%q) = %q", kind, m, s, o)
				}
			}
			if again := Text(o); again != o {
				t.Fatalf("not idempotent:\n  in %q\n out %q\nout2 %q", s, o, again)
			}
			if utf8.ValidString(s) && !utf8.ValidString(o) {
				t.Fatalf("redaction broke UTF-8: %q", o)
			}
		}
	})
}
