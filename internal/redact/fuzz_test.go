package redact

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/redact/redacttest"
)

// fuzzEmail is a conventional address, written independently of the
// redactor's own scanner.
var fuzzEmail = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)

// R-PRIVACY-1: for any input, no email address in it survives, the planted
// corpus of every secret kind survives in no surrounding text, redaction
// is a fixed point (re-redacting stored text changes nothing) and keeps
// valid UTF-8 valid.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"", "a@b.cc", "a@b.cc@d.ee", "x@v1.2.3_y@z.com", "x@v1.2.3-a.com",
		"token=token=abc", "https://a:b@c@d.com", "password=[REDACTED:password]x",
		"Bearer eyJa.eyJb.c", "-----BEGIN PRIVATE KEY-----", "a.@b.cc.", "ghp_" + strings.Repeat("A", 30) + "@x.io",
		`"password":"a\"b c"`, "email:0123456789ab@x.io", "\"q\"@x.io", "ü＠ß.de", "a%40b.c",
		"https://h/p?x=[REDACTED:url_param]&y=1#f", "v1,AAAA", "glpat-" + strings.Repeat("x", 25),
	} {
		f.Add(s, s)
	}
	planted := redacttest.Planted()
	literals := redacttest.Literals()
	f.Fuzz(func(t *testing.T, prefix, suffix string) {
		in := prefix + "\n" + planted + "\n" + suffix
		out := Text(in)
		for _, lit := range literals {
			if strings.Contains(out, lit) && !strings.Contains(prefix+suffix, lit) {
				t.Fatalf("planted %q survived with prefix %q and suffix %q", lit, prefix, suffix)
			}
		}
		for _, s := range []string{prefix, suffix} {
			o := Text(s)
			for _, addr := range fuzzEmail.FindAllString(s, -1) {
				if strings.Contains(o, addr) {
					t.Fatalf("email %q survived: Text(%q) = %q", addr, s, o)
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
