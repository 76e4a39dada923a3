package deadletter

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Literals planted by the tests. Each is a realistic secret of its kind;
// none may survive redaction.
const (
	plantAWSKeyID    = "AKIAIOSFODNN7EXAMPLE"
	plantAWSTempID   = "ASIAY34FZKBOKMUTVV7A"
	plantAWSSecret   = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	plantBearer      = "mF_9.B5f-4.1JqM"
	plantBasic       = "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
	plantToken       = "tok_5ecr3tV4lue"
	plantAPIKey      = "ak_live_7f3c2b1a9e"
	plantAPIKeyBare  = "bareapikey12345"
	plantPassword    = "hunter2-correct-horse"
	plantSecret      = "s3cr3t-value-xyz"
	plantHubSig      = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	plantOpenAI      = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
	plantGHP         = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	plantGHO         = "gho_16C7e42F292c6912E7710c838347Ae178B4a"
	plantGHPAT       = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
	plantSlack       = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	plantJWT         = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	plantPEMBody     = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
	plantURLPass     = "pa55w0rd-in-url"
	plantURLUser     = "deploy-bot"
	plantQueryToken  = "qtok-998877"
	plantQuerySig    = "qsig-ABCDEF0123"
	plantEmail       = "Alice.Reviewer@Example.com"
	plantEmail2      = "bob+ci@corp.example.org"
	plantJSONPass    = "spaced pass phrase"
	plantEscapedPass = "escaped-pa55"
	plantCookie      = "session=abcdef123456"
	plantSessionTok  = "FwoGZXIvYXdzEJr//////////wEaDOnSessionTokenValue"
)

// plantedText contains every kind of secret §8.4 forbids, in the shapes they
// take in error messages, headers, URLs, JSON and stack traces.
func plantedText() string {
	return strings.Join([]string{
		"aws_access_key_id=" + plantAWSKeyID,
		"temporary id " + plantAWSTempID,
		"aws_secret_access_key = " + plantAWSSecret,
		`{"SecretAccessKey":"` + plantAWSSecret + `","SessionToken":"` + plantSessionTok + `"}`,
		"Authorization: Bearer " + plantBearer,
		"proxy-authorization: Basic " + plantBasic,
		"sent header bearer " + plantBearer,
		"GET /x?a=1&token=" + plantToken,
		"api_key=" + plantAPIKey,
		"x-apikey: " + plantAPIKeyBare,
		"password=" + plantPassword,
		"client_secret=" + plantSecret,
		"X-Hub-Signature-256: sha256=" + plantHubSig,
		"computed sha256=" + plantHubSig,
		"llm key " + plantOpenAI,
		"git token " + plantGHP + " oauth " + plantGHO + " pat " + plantGHPAT,
		"slack " + plantSlack,
		"jwt " + plantJWT,
		"-----BEGIN RSA PRIVATE KEY-----\n" + plantPEMBody + "\n-----END RSA PRIVATE KEY-----",
		"clone https://" + plantURLUser + ":" + plantURLPass + "@git.example.com/org/repo.git",
		"callback https://hooks.example.com/x?id=7&access_token=" + plantQueryToken + "&sig=" + plantQuerySig,
		"recipient " + plantEmail + " cc <" + plantEmail2 + ">.",
		`{"password": "` + plantJSONPass + `"}`,
		`body: "{\"password\":\"` + plantEscapedPass + `\"}"`,
		"Cookie: " + plantCookie,
	}, "\n")
}

var plantedLiterals = []string{
	plantAWSKeyID, plantAWSTempID, plantAWSSecret, plantBearer, plantBasic, plantToken,
	plantAPIKey, plantAPIKeyBare, plantPassword, plantSecret, plantHubSig, plantOpenAI,
	plantGHP, plantGHO, plantGHPAT, plantSlack, plantJWT, plantPEMBody, plantURLPass,
	plantURLUser, plantQueryToken, plantQuerySig, plantEmail, strings.ToLower(plantEmail),
	plantEmail2, plantJSONPass, "spaced", plantEscapedPass, plantCookie, plantSessionTok,
	// Parts that would still identify the secret.
	"hunter2", "IOSFODNN7", "bPxRfiCYEXAMPLEKEY", "Alice.Reviewer", "bob+ci",
}

func assertNoLiterals(t *testing.T, where, s string) {
	t.Helper()
	for _, lit := range plantedLiterals {
		if strings.Contains(s, lit) {
			t.Errorf("%s: planted literal %q survived", where, lit)
		}
	}
}

// §8.4 rule 2: "Stack traces MUST be redacted if they contain sensitive
// literals."
func TestRedact_EveryKind_001_8_4(t *testing.T) {
	out := Redact(plantedText())
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
	for _, e := range []string{plantEmail, plantEmail2} {
		if !strings.Contains(out, HashEmail(e)) {
			t.Errorf("email %q not replaced by %s", e, HashEmail(e))
		}
	}
}

// §8.4 rule 2: "Stack traces MUST be redacted if they contain sensitive
// literals" — only the literal goes; its label stays for triage.
func TestRedact_ExactOutputs_001_8_4(t *testing.T) {
	tests := []struct{ in, want string }{
		{"password=hunter2&user=bob", "password=[REDACTED:password]&user=bob"},
		{"Authorization: Bearer abc.def", "Authorization: [REDACTED:authorization]"},
		{"X-Hub-Signature-256: sha256=" + plantHubSig, "X-Hub-Signature-256: [REDACTED:signature]"},
		{"https://u:p@host/x?key=k1&page=2", "https://[REDACTED:userinfo]@host/x?key=[REDACTED:url_param]&page=2"},
		{"mail to Bob@Example.COM.", "mail to " + HashEmail("bob@example.com") + "."},
		{"ok: request id 1f2e-3d, status 503", "ok: request id 1f2e-3d, status 503"},
		{"-----BEGIN PRIVATE KEY-----\nMIIE...(cut", "[REDACTED:private_key]"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// §8.4: "last_stack: most recent stack trace or error chain" — redaction
// must not destroy what makes it useful (module versions, request ids, hashes).
func TestRedact_KeepsTriageDetail_001_8_4(t *testing.T) {
	keep := []string{
		"github.com/aws/smithy-go@v1.28.8/transport/http/client.go:123 +0x1d",
		"golang.org/x/net@v0.0.0-20240101120000-abcdef123456/http2/transport.go:9",
		"idempotency_key_sha256 3f2a9c1b7d4e",
		"operation error SESv2: SendEmail, https response error StatusCode: 429, RequestID: 5a1b",
		"image@sha256:0123abcd",
		"body_sha256=" + plantHubSig,
	}
	for _, s := range keep {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want unchanged", s, got)
		}
	}
}

// §8.4 rule 1: no raw PII; emails become a stable pseudonym.
func TestHashEmail_StablePseudonym_001_8_4(t *testing.T) {
	h := HashEmail(" Alice.Reviewer@Example.com ")
	if h != HashEmail("alice.reviewer@example.com") {
		t.Error("HashEmail is not case- and space-insensitive")
	}
	if !strings.HasPrefix(h, "email:") || len(h) != len("email:")+12 {
		t.Errorf("HashEmail = %q, want email:<12 hex>", h)
	}
	if got := Redact("to: " + plantEmail); got != "to: "+h {
		t.Errorf("Redact = %q, want %q", got, "to: "+h)
	}
	if got := Redact("git author alice@laptop"); got != "git author "+HashEmail("alice@laptop") {
		t.Errorf("dotless address kept: %q", got)
	}
}

// §8.4 rule 2: redacted stack traces stay redacted — Redact is a fixed point,
// so re-redacting a stored envelope changes nothing.
func TestRedact_Idempotent_001_8_4(t *testing.T) {
	for _, s := range []string{plantedText(), "a@b.cc@d.ee", "x@v1.2.3_y@z.com", "token=token=abc", "https://a:b@c@d.com"} {
		once := Redact(s)
		if twice := Redact(once); twice != once {
			t.Errorf("not idempotent for %q:\n once %q\ntwice %q", s, once, twice)
		}
	}
}

// §8.4 rule 2: "Stack traces MUST be redacted if they contain sensitive
// literals" — also when the error message embeds JSON- or %q-encoded text,
// sometimes twice: escaped quotes, "\n" as two characters, '&' as \u0026.
func TestRedact_EncodedText_001_8_4(t *testing.T) {
	once := mustJSONString(plantedText())
	twice := mustJSONString(once)
	for name, s := range map[string]string{"json": once, "json twice": twice, "%q": fmt.Sprintf("%q", plantedText())} {
		assertNoLiterals(t, name, Redact(s))
	}
}

func mustJSONString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
