package deadletter

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzEmail is a conventional address, written independently of the
// redactor's own patterns.
var fuzzEmail = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)

// §8.4 rule 1 ("no raw PII") and rule 2 (redacted stack traces): for any
// input, no email address in it survives redaction, and redaction is a
// fixed point so re-redacting stored envelopes changes nothing.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		plantedText(), "a@b.cc", "a@b.cc@d.ee", "x@v1.2.3_y@z.com", "x@v1.2.3-a.com",
		"token=token=abc", "https://a:b@c@d.com", "password=[REDACTED:password]x",
		"Bearer eyJa.eyJb.c", "-----BEGIN PRIVATE KEY-----", "a.@b.cc.", "ghp_" + strings.Repeat("A", 30) + "@x.io",
		`"password":"a\"b c"`, "email:0123456789ab@x.io",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Redact(in)
		for _, addr := range fuzzEmail.FindAllString(in, -1) {
			if strings.Contains(out, addr) {
				t.Fatalf("email %q survived: Redact(%q) = %q", addr, in, out)
			}
		}
		if again := Redact(out); again != out {
			t.Fatalf("not idempotent:\n  in %q\n out %q\nout2 %q", in, out, again)
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("redaction broke UTF-8: %q", out)
		}
	})
}

// Decode reads whatever lands in a dead-letter queue; it must never panic,
// and anything it accepts must re-encode to something it accepts again.
func FuzzDecode(f *testing.F) {
	valid, _ := json.Marshal(New(plantedFailure()))
	for _, s := range []string{
		string(valid), `{"job_id":"x"}`, `{"schema_version":1}`, `{"schema_version":2}`,
		`{"schema_version":"1"}`, `{"schema_version":1e400}`, `[]`, `null`, ``, `{`,
		`{"schema_version":1,"first_failure_at":"not a time"}`, `{"schema_version":1,"notes":[{"at":1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, ok, err := Decode(b)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if !ok {
			return
		}
		re, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, ok, err := Decode(re); !ok || err != nil {
			t.Fatalf("re-decode of %s: ok %v err %v", re, ok, err)
		}
	})
}
