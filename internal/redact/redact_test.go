package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/redact/redacttest"
)

func assertNoLiterals(t *testing.T, where, s string) {
	t.Helper()
	for _, lit := range redacttest.Literals() {
		if strings.Contains(s, lit) {
			t.Errorf("%s: planted literal %q survived", where, lit)
		}
	}
}

// R-PRIVACY-1, R-PRIVACY-3: "Stack traces MUST be redacted if they contain sensitive
// literals."
func TestRedact_EveryKind(t *testing.T) {
	out := Text(redacttest.Planted())
	assertNoLiterals(t, "Redact", out)
	for _, kind := range []string{
		"aws_access_key_id", "aws_secret", "authorization", "bearer", "token", "api_key",
		"password", "secret", "signature", "github_token", "slack_token", "jwt",
		"private_key", "userinfo", "url_param", "cookie",
	} {
		if !strings.Contains(out, "[REDACTED:"+kind+"]") {
			t.Errorf("no [REDACTED:%s] marker in:\n%s", kind, out)
		}
	}
	for _, e := range []string{"Alice.Reviewer@Example.com", "bob+ci@corp.example.org"} {
		if !strings.Contains(out, Email(e)) {
			t.Errorf("email %q not replaced by %s", e, Email(e))
		}
	}
}

// R-PRIVACY-1, R-PRIVACY-3: "Stack traces MUST be redacted if they contain sensitive
// literals" — only the literal goes; its label stays for triage.
func TestRedact_ExactOutputs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"password=hunter2&user=bob", "password=[REDACTED:password]&user=bob"},
		{"Authorization: Bearer abc.def", "Authorization: [REDACTED:authorization]"},
		{"X-Hub-Signature-256: sha256=" + "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "X-Hub-Signature-256: [REDACTED:signature]"},
		{"https://u:p@host/x?key=k1&page=2", "https://[REDACTED:userinfo]@host/x?key=[REDACTED:url_param]&page=[REDACTED:url_param]"},
		{"GET /x?a=1&token=t0k", "GET /x?a=1&token=[REDACTED:token]"},
		{"mail to Bob@Example.COM.", "mail to " + Email("bob@example.com") + "."},
		{"ok: request id 1f2e-3d, status 503", "ok: request id 1f2e-3d, status 503"},
		{"-----BEGIN PRIVATE KEY-----\nMIIE...(cut", "[REDACTED:private_key]"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// R-PRIVACY-1, R-PRIVACY-3: "last_stack: most recent stack trace or error chain" — redaction
// must not destroy what makes it useful (module versions, request ids, hashes).
func TestRedact_KeepsTriageDetail(t *testing.T) {
	keep := []string{
		"github.com/aws/smithy-go@v1.28.8/transport/http/client.go:123 +0x1d",
		"golang.org/x/net@v0.0.0-20240101120000-abcdef123456/http2/transport.go:9",
		"idempotency_key_sha256 3f2a9c1b7d4e",
		"operation error SESv2: SendEmail, https response error StatusCode: 429, RequestID: 5a1b",
		"image@sha256:0123abcd",
		"body_sha256=" + "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
	}
	for _, s := range keep {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want unchanged", s, got)
		}
	}
}

// R-PRIVACY-1, R-PRIVACY-3: no raw PII; emails become a stable pseudonym.
func TestHashEmail_StablePseudonym(t *testing.T) {
	h := Email(" Alice.Reviewer@Example.com ")
	if h != Email("alice.reviewer@example.com") {
		t.Error("HashEmail is not case- and space-insensitive")
	}
	if !strings.HasPrefix(h, "email:") || len(h) != len("email:")+12 {
		t.Errorf("HashEmail = %q, want email:<12 hex>", h)
	}
	if got := Text("to: " + "Alice.Reviewer@Example.com"); got != "to: "+h {
		t.Errorf("Redact = %q, want %q", got, "to: "+h)
	}
	if got := Text("git author alice@laptop"); got != "git author "+Email("alice@laptop") {
		t.Errorf("dotless address kept: %q", got)
	}
}

// R-PRIVACY-1, R-PRIVACY-3: redacted stack traces stay redacted — Redact is a fixed point,
// so re-redacting a stored envelope changes nothing.
func TestRedact_Idempotent(t *testing.T) {
	for _, s := range []string{redacttest.Planted(), "a@b.cc@d.ee", "x@v1.2.3_y@z.com", "token=token=abc", "https://a:b@c@d.com"} {
		once := Text(s)
		if twice := Text(once); twice != once {
			t.Errorf("not idempotent for %q:\n once %q\ntwice %q", s, once, twice)
		}
	}
}

// R-PRIVACY-1, R-PRIVACY-3: "Stack traces MUST be redacted if they contain sensitive
// literals" — also when the error message embeds JSON- or %q-encoded text,
// sometimes twice: escaped quotes, "\n" as two characters, '&' as \u0026.
func TestRedact_EncodedText(t *testing.T) {
	once := mustJSONString(redacttest.Planted())
	twice := mustJSONString(once)
	for name, s := range map[string]string{"json": once, "json twice": twice, "%q": fmt.Sprintf("%q", redacttest.Planted())} {
		assertNoLiterals(t, name, Text(s))
	}
}

func mustJSONString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// R-PRIVACY-3: what counts as an address, edge by edge: dots anywhere in a
// local part (also nothing but dots: `.@0.Aom`, found by FuzzText), any
// last label, dotless hosts, address literals up to 64 bytes (a full IPv6
// form), domains of any length; and what does not: an at sign with nothing
// before it, a number, a module version, a digest.
func TestRedact_AddressContract(t *testing.T) {
	long := strings.Repeat("1", 600) + "x"
	ipv6 := "[IPv6:2001:db8:ffff:ffff:ffff:ffff:255.255.255.255]"
	for in, want := range map[string]string{
		".@0.Aom":           Email(".@0.Aom"),
		"..@x.org":          Email("..@x.org"),
		"a..b.@x.org":       Email("a..b.@x.org"),
		"see .a@x.org":      "see ." + Email("a@x.org"),
		"a@b.c":             Email("a@b.c"),
		"a@b.c1.":           Email("a@b.c1") + ".",
		"alice@laptop":      Email("alice@laptop"),
		"erin@" + ipv6:      Email("erin@" + ipv6),
		"a@" + long:         Email("a@" + long),
		`"a b"@x.org`:       Email(`"a b"@x.org`),
		"ü＠ß.de":            Email("ü@ß.de"),
		"dave%40example.io": Email("dave@example.io"),
		"cc @alice":         "cc @alice",
		"x@2024":            "x@2024",
		"smithy-go@v1.28.8": "smithy-go@v1.28.8",
		"x@v1.2.3-a.com":    Email("x@v1.2.3-a.com"),
		"image@sha256":      "image@sha256",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// R-PRIVACY-3: at signs chained to an address are redacted with it, in
// one pass: replacing the address alone left "x@email:…" (a pseudonym
// starts like a domain), a new address each pass redacted one link of,
// so a chain longer than the passes survived.
func TestRedact_ChainedAtSigns(t *testing.T) {
	for in, want := range map[string]string{
		"x@1@b.com":          Email("x@1@b.com"),
		"a@b.cc@d.ee":        Email("a@b.cc@d.ee"),
		`"a"@"b"@c.org`:      Email(`"a"@"b"@c.org`),
		"cc @x@b.com":        "cc @" + Email("x@b.com"),
		"a%40b%40c%40d.org":  Email("a@b%40c%40d.org"),
		"pkg@v1.2.3 x@b.com": "pkg@v1.2.3 " + Email("x@b.com"),
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{strings.Repeat("a%40", 20) + "b.com", "x@" + strings.Repeat("1@", 10) + "b.com", strings.Repeat(`"a"@`, 10) + "b.com"} {
		if got := Text(in); strings.ContainsAny(got, "@%") {
			t.Errorf("Text(%q) = %q: part of the chain survived", in, got)
		}
	}
}
