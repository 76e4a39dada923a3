package webhook_test

// Tests of the generic webhook contract: a caller signs the raw JSON body with
// HMAC-SHA256, sends an Idempotency-Key, and gets back either a validated
// Change or an error naming exactly what it must fix.
//
// The helpers are prefixed with "gen" so they cannot collide with helpers of
// other adapters' tests in this package.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/webhook"
)

// genSecret is the webhook secret every test signs with.
var genSecret = []byte("test-webhook-secret-3f9a")

// genSamplePath is the documented example request, shared with the fuzz seed.
const genSamplePath = "../../events/generic-webhook.json"

// genFields returns a fresh, valid body as a map, so a test can change, add
// or delete one field and marshal it.
func genFields() map[string]any {
	return map[string]any{
		"changelist_id":  "billing-1042",
		"review_version": 3,
		"title":          "Add refunds to invoices",
		"url":            "https://review.example.com/c/billing/+/1042",
		"author":         "ana",
		"recipients":     []any{"reviewer1@example.com", "reviewer2@example.com"},
		"diff":           "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n",
	}
}

func genJSON(t testing.TB, fields map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatalf("marshal body: %v", err)
	}
	return b
}

// genRequest builds a Request whose Header lookup is case-insensitive, as the
// Request contract requires. A header mapped to "" is absent.
func genRequest(body []byte, headers map[string]string) webhook.Request {
	canon := make(map[string]string, len(headers))
	for k, v := range headers {
		canon[http.CanonicalHeaderKey(k)] = v
	}
	return webhook.Request{
		Header: func(name string) string { return canon[http.CanonicalHeaderKey(name)] },
		Body:   body,
	}
}

// genSigned is a correctly signed request with an idempotency key.
func genSigned(body []byte) webhook.Request {
	return genRequest(body, map[string]string{
		webhook.SignatureHeader: webhook.Sign(genSecret, body),
		"Idempotency-Key":       "ci-run-8812",
	})
}

func genParse(r webhook.Request) (webhook.Change, error) {
	return webhook.Generic{Secret: genSecret}.Parse(r)
}

// genWantFieldError fails unless err is a *webhook.FieldError for field that
// maps to HTTP 400.
func genWantFieldError(t *testing.T, err error, field string) *webhook.FieldError {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a *FieldError for %q", field)
	}
	var fe *webhook.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError; want one for %q", err, err, field)
	}
	if fe.Field != field {
		t.Errorf("FieldError.Field = %q (%v); want %q", fe.Field, err, field)
	}
	if fe.Message == "" {
		t.Errorf("FieldError for %q has no message", fe.Field)
	}
	if got := webhook.Status(err); got != 400 {
		t.Errorf("Status(%v) = %d; want 400", err, got)
	}
	return fe
}

func genWantAuthError(t *testing.T, err error) {
	t.Helper()
	var ae *webhook.AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *AuthError", err, err)
	}
	if got := webhook.Status(err); got != 401 {
		t.Errorf("Status(%v) = %d; want 401", err, got)
	}
}

// A valid request yields every field of the Change, normalized.
func TestGenericParse_ValidRequestYieldsChange(t *testing.T) {
	f := genFields()
	f["title"] = "  Add refunds to invoices  "
	f["recipients"] = []any{"Reviewer1@Example.com", " reviewer2@example.com "}
	c, err := genParse(genSigned(genJSON(t, f)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := webhook.Change{
		Source:         "generic",
		IdempotencyKey: "ci-run-8812",
		ChangelistID:   "billing-1042",
		ReviewVersion:  3,
		Title:          "Add refunds to invoices",
		URL:            "https://review.example.com/c/billing/+/1042",
		Author:         "ana",
		Recipients:     []string{"reviewer1@example.com", "reviewer2@example.com"},
		Diff:           f["diff"].(string),
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse:\n got %#v\nwant %#v", c, want)
	}
}

// A caller's review_version is an explicit rerun unless the request opts
// in to the quiet rules: "quiet": true; absent, false or null, the
// version is mailed to every recipient.
// Rules: R-RERUN-2, R-INTAKE-4.
func TestGenericParse_QuietIsAnOptIn(t *testing.T) {
	for _, tt := range []struct {
		value any
		set   bool
		want  bool
	}{{nil, false, false}, {true, true, true}, {false, true, false}, {nil, true, false}} {
		f := genFields()
		if tt.set {
			f["quiet"] = tt.value
		}
		c, err := genParse(genSigned(genJSON(t, f)))
		if err != nil {
			t.Fatalf("quiet %v (set %t): %v", tt.value, tt.set, err)
		}
		if c.Quiet != tt.want {
			t.Errorf("quiet %v (set %t): Change.Quiet %t, want %t", tt.value, tt.set, c.Quiet, tt.want)
		}
	}
}

// The optional repository names what a code host's changelist id holds
// before its number: absent or null, none; a path such as acme/billing,
// trimmed; anything else (not a string, empty, over 255 bytes, white
// space, control or bidi characters, # ! ~ ? or a backslash, an empty
// segment) is a 400 naming the field.
// Rules: R-INTAKE-7, R-INTAKE-4.
func TestGenericParse_RepositoryOptionalValidatedNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		value any
		set   bool
		want  string
		ok    bool
	}{
		{nil, false, "", true},
		{nil, true, "", true},
		{"acme/billing", true, "acme/billing", true},
		{"  platform/infra/terraform-modules  ", true, "platform/infra/terraform-modules", true},
		{"billing", true, "billing", true},
		{"ünïcode/repo", true, "ünïcode/repo", true},
		{strings.Repeat("r", webhook.MaxRepository), true, strings.Repeat("r", webhook.MaxRepository), true},
		{strings.Repeat("r", webhook.MaxRepository+1), true, "", false},
		{"", true, "", false},
		{"   ", true, "", false},
		{7, true, "", false},
		{[]string{"acme/billing"}, true, "", false},
		{"acme billing", true, "", false},
		{"acme/\u202ebilling", true, "", false},
		{"acme/bill\x00ing", true, "", false},
		{"acme/billing#7", true, "", false},
		{"acme/billing!3", true, "", false},
		{"acme~x", true, "", false},
		{"acme/billing?x=1", true, "", false},
		{"acme\\billing", true, "", false},
		{"/acme/billing", true, "", false},
		{"acme/billing/", true, "", false},
		{"acme//billing", true, "", false},
	} {
		f := genFields()
		if tt.set {
			f["repository"] = tt.value
		}
		c, err := genParse(genSigned(genJSON(t, f)))
		if !tt.ok {
			genWantFieldError(t, err, "repository")
			continue
		}
		if err != nil {
			t.Errorf("repository %#v: %v", tt.value, err)
			continue
		}
		if c.Repository != tt.want {
			t.Errorf("repository %#v: Change.Repository %q, want %q", tt.value, c.Repository, tt.want)
		}
	}
}

// The example shipped in events/ is what the docs tell callers to send; it
// must stay valid.
func TestGenericParse_ShippedExampleIsAccepted(t *testing.T) {
	body, err := os.ReadFile(genSamplePath)
	if err != nil {
		t.Fatalf("read example: %v", err)
	}
	c, err := genParse(genSigned(body))
	if err != nil {
		t.Fatalf("Parse(%s): %v", genSamplePath, err)
	}
	if c.ChangelistID != "billing-1042" || c.ReviewVersion != 1 || len(c.Recipients) != 2 || c.Diff == "" || c.DiffURL != "" {
		t.Errorf("Parse(%s) = %+v", genSamplePath, c)
	}
}

// R-INTAKE-1: "A new review-processing job MUST be created with a
// caller-provided idempotency_key." The generic contract carries it in the
// Idempotency-Key header: 1–128 printable ASCII characters.
func TestGenericParse_IdempotencyKeyRequiredPrintableASCII(t *testing.T) {
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{"missing", "", false},
		{"one character", "k", true},
		{"128 characters", strings.Repeat("k", 128), true},
		{"129 characters", strings.Repeat("k", 129), false},
		{"every printable ASCII character", " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~", true},
		{"uuid", "5f0c6a2e-8d0b-4c39-9a56-0f7f3d1e2b44", true},
		{"tab", "run\t1", false},
		{"newline", "run\n1", false},
		{"NUL", "run\x001", false},
		{"DEL", "run\x7f", false},
		{"non-ASCII", "clé", false},
		{"emoji", "run-🚀", false},
	}
	body := genJSON(t, genFields())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := genRequest(body, map[string]string{
				webhook.SignatureHeader: webhook.Sign(genSecret, body),
				"Idempotency-Key":       tt.key,
			})
			c, err := genParse(r)
			if !tt.ok {
				genWantFieldError(t, err, "Idempotency-Key")
				return
			}
			if err != nil {
				t.Fatalf("Parse with key %q: %v", tt.key, err)
			}
			if c.IdempotencyKey != tt.key {
				t.Errorf("IdempotencyKey = %q; want %q unchanged", c.IdempotencyKey, tt.key)
			}
		})
	}
}

// Header names are case-insensitive: a key sent as "idempotency-key" counts.
func TestGenericParse_HeaderNamesAreCaseInsensitive(t *testing.T) {
	body := genJSON(t, genFields())
	r := genRequest(body, map[string]string{
		"x-criticizer-signature": webhook.Sign(genSecret, body),
		"IDEMPOTENCY-KEY":        "k-1",
	})
	c, err := genParse(r)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.IdempotencyKey != "k-1" {
		t.Errorf("IdempotencyKey = %q; want k-1", c.IdempotencyKey)
	}
}

// X-Criticizer-Signature is "sha256=" + hex(HMAC-SHA256(secret, raw body)).
func TestSign_IsHexHMACSHA256OfRawBody(t *testing.T) {
	// RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
	got := webhook.Sign([]byte("Jefe"), []byte("what do ya want for nothing?"))
	want := "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got != want {
		t.Errorf("Sign = %s; want %s", got, want)
	}
}

// The signature is verified against the raw bytes; anything else is 401.
// Rules: R-INTAKE-6.
func TestGenericParse_SignatureVerifiedAgainstRawBody(t *testing.T) {
	body := genJSON(t, genFields())
	good := webhook.Sign(genSecret, body)
	hexPart := strings.TrimPrefix(good, "sha256=")

	// The same JSON meaning, re-encoded: indented, and with keys reordered.
	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	reordered := []byte(fmt.Sprintf(`{"url":%q,"title":%q,"changelist_id":%q,"review_version":3,"author":%q,"recipients":["reviewer1@example.com","reviewer2@example.com"],"diff":%s}`,
		m["url"], m["title"], m["changelist_id"], m["author"], mustJSON(t, m["diff"])))

	tests := []struct {
		name   string
		body   []byte
		header string // "" = header absent
	}{
		{"re-encoded body, indented", indented.Bytes(), good},
		{"re-encoded body, keys reordered", reordered, good},
		{"trailing newline added after signing", append(append([]byte{}, body...), '\n'), good},
		{"wrong secret", body, webhook.Sign([]byte("another-secret"), body)},
		{"missing header", body, ""},
		{"bad hex", body, "sha256=" + strings.Repeat("zz", 32)},
		{"hex too short", body, "sha256=" + hexPart[:62]},
		{"hex too long", body, good + "00"},
		{"empty hex", body, "sha256="},
		{"no prefix", body, hexPart},
		{"sha1 prefix", body, "sha1=" + hexPart},
		{"upper-case prefix", body, "SHA256=" + hexPart},
		{"space after prefix", body, "sha256= " + hexPart},
		{"signature of the empty body", body, webhook.Sign(genSecret, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := genRequest(tt.body, map[string]string{
				webhook.SignatureHeader: tt.header,
				"Idempotency-Key":       "k",
			})
			_, err := genParse(r)
			genWantAuthError(t, err)
		})
	}

	t.Run("the signed raw body is accepted", func(t *testing.T) {
		if _, err := genParse(genSigned(body)); err != nil {
			t.Fatalf("Parse: %v", err)
		}
	})
	t.Run("upper-case hex digits are the same signature", func(t *testing.T) {
		r := genRequest(body, map[string]string{
			webhook.SignatureHeader: "sha256=" + strings.ToUpper(hexPart),
			"Idempotency-Key":       "k",
		})
		if _, err := genParse(r); err != nil {
			t.Fatalf("Parse: %v", err)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Without a configured secret nothing can be verified, so every request is
// refused (fail closed), including one "signed" with the empty key.
// Rules: R-INTAKE-6.
func TestGenericParse_NoSecretConfiguredRejectsEverything(t *testing.T) {
	body := genJSON(t, genFields())
	r := genRequest(body, map[string]string{
		webhook.SignatureHeader: webhook.Sign(nil, body),
		"Idempotency-Key":       "k",
	})
	_, err := webhook.Generic{}.Parse(r)
	genWantAuthError(t, err)
}

// The signature is checked first, so an unsigned request learns nothing
// about validation: a bad body or a missing key under a bad signature is 401.
func TestGenericParse_UnsignedRequestLearnsNothingAboutValidation(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		key  string
	}{
		{"invalid JSON", []byte(`{"changelist_id":`), "k"},
		{"unknown field", []byte(`{"secret_probe":1}`), "k"},
		{"missing idempotency key", genJSON(t, genFields()), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := genRequest(tt.body, map[string]string{
				webhook.SignatureHeader: webhook.Sign([]byte("guess"), tt.body),
				"Idempotency-Key":       tt.key,
			})
			_, err := genParse(r)
			genWantAuthError(t, err)
		})
	}
}

// An AuthError never includes the secret or the signature the server
// expected: either would let a caller forge requests.
func TestGenericParse_AuthErrorLeaksNeitherSecretNorExpectedSignature(t *testing.T) {
	body := genJSON(t, genFields())
	expected := webhook.Sign(genSecret, body)
	for _, header := range []string{"", "sha256=00", webhook.Sign([]byte("x"), body), "nope"} {
		r := genRequest(body, map[string]string{webhook.SignatureHeader: header, "Idempotency-Key": "k"})
		_, err := genParse(r)
		genWantAuthError(t, err)
		msg := err.Error()
		if strings.Contains(msg, string(genSecret)) || strings.Contains(msg, strings.TrimPrefix(expected, "sha256=")) {
			t.Errorf("header %q: error %q leaks the secret or the expected signature", header, msg)
		}
	}
}

// review_version is a positive integer (32-bit): anything else is rejected
// naming review_version. R-INTAKE-3 compares versions numerically
// ("strictly higher review_version"), so "3" or 1.5 cannot be accepted.
func TestGenericParse_ReviewVersionMustBePositiveInteger(t *testing.T) {
	tests := []struct {
		name string
		raw  string // JSON text of the value; "" removes the field
		want int    // 0 = rejected
	}{
		{"one", `1`, 1},
		{"large", `2147483647`, 2147483647},
		{"zero", `0`, 0},
		{"negative", `-1`, 0},
		{"fraction", `1.5`, 0},
		{"integral float", `2.0`, 0},
		{"exponent", `1e2`, 0},
		{"string", `"3"`, 0},
		{"null", `null`, 0},
		{"missing", ``, 0},
		{"2^31", `2147483648`, 0},
		{"2^63", `9223372036854775808`, 0},
		{"boolean", `true`, 0},
		{"object", `{}`, 0},
		{"array", `[3]`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := genFields()
			if tt.raw == "" {
				delete(f, "review_version")
			} else {
				f["review_version"] = json.RawMessage(tt.raw)
			}
			c, err := genParse(genSigned(genJSON(t, f)))
			if tt.want == 0 {
				genWantFieldError(t, err, "review_version")
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.ReviewVersion != tt.want {
				t.Errorf("ReviewVersion = %d; want %d", c.ReviewVersion, tt.want)
			}
		})
	}
}

// changelist_id, title and author are required text: trimmed, non-empty,
// bounded, no control characters.
func TestGenericParse_RequiredTextFields(t *testing.T) {
	limits := map[string]int{"changelist_id": 256, "title": 1000, "author": 1000}
	for field, max := range limits {
		tests := []struct {
			name  string
			value any // nil deletes the field
			want  string
			ok    bool
		}{
			{"missing", nil, "", false},
			{"null", json.RawMessage(`null`), "", false},
			{"empty", "", "", false},
			{"only spaces", "   \t ", "", false},
			{"number", 7, "", false},
			{"control character", "a\x07b", "", false},
			{"embedded newline", "line1\nline2", "", false},
			{"at the limit", strings.Repeat("x", max), strings.Repeat("x", max), true},
			{"over the limit", strings.Repeat("x", max+1), "", false},
			{"surrounding spaces trimmed", "  value  ", "value", true},
			{"unicode", "Réfactor ✓", "Réfactor ✓", true},
		}
		for _, tt := range tests {
			t.Run(field+"/"+tt.name, func(t *testing.T) {
				f := genFields()
				if tt.value == nil {
					delete(f, field)
				} else {
					f[field] = tt.value
				}
				c, err := genParse(genSigned(genJSON(t, f)))
				if !tt.ok {
					genWantFieldError(t, err, field)
					return
				}
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				got := map[string]string{"changelist_id": c.ChangelistID, "title": c.Title, "author": c.Author}[field]
				if got != tt.want {
					t.Errorf("%s = %q; want %q", field, got, tt.want)
				}
			})
		}
	}
}

// url and diff_url must be absolute http or https URLs: a javascript: or
// file: link must never reach an email or a fetcher.
func TestGenericParse_URLsMustBeHTTPOrHTTPS(t *testing.T) {
	tests := []struct {
		name string
		url  string
		ok   bool
	}{
		{"https", "https://review.example.com/c/1", true},
		{"http", "http://review.example.com/c/1", true},
		{"with port and query", "https://review.example.com:8443/c/1?tab=files#top", true},
		{"javascript", "javascript:alert(1)", false},
		{"data", "data:text/html,<script>alert(1)</script>", false},
		{"file", "file:///etc/passwd", false},
		{"ftp", "ftp://review.example.com/c/1", false},
		{"mailto", "mailto:a@example.com", false},
		{"relative", "/c/1", false},
		{"scheme-relative", "//review.example.com/c/1", false},
		{"no host", "https://", false},
		{"empty", "", false},
		{"not a URL", "review example com", false},
		{"control character", "https://example.com/\x00", false},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), false},
		// Found by FuzzGenericRoundTrip: 2021 bytes as sent, 4019 as stored
		// ("a b" is stored as "a%20b"), so the stored URL failed validation.
		{"too long once escaped", "https://example.com/" + strings.Repeat("a ", 1000) + "z", false},
	}
	for _, field := range []string{"url", "diff_url"} {
		for _, tt := range tests {
			t.Run(field+"/"+tt.name, func(t *testing.T) {
				f := genFields()
				if field == "diff_url" {
					delete(f, "diff")
				}
				f[field] = tt.url
				c, err := genParse(genSigned(genJSON(t, f)))
				if !tt.ok {
					genWantFieldError(t, err, field)
					return
				}
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				got := c.URL
				if field == "diff_url" {
					got = c.DiffURL
				}
				if got != tt.url {
					t.Errorf("%s = %q; want %q", field, got, tt.url)
				}
			})
		}
	}
	t.Run("url/missing", func(t *testing.T) {
		f := genFields()
		delete(f, "url")
		_, err := genParse(genSigned(genJSON(t, f)))
		genWantFieldError(t, err, "url")
	})
}

// R-OUTBOX-1: the delivery key is (changelist_id, recipient,
// review_version), so recipients must be bare addresses (a display name
// would become part of the key) and duplicates after lower-casing are one
// recipient ("a reviewer listed as Ann@x and ann@x must get one email").
func TestGenericParse_RecipientsAreBareUniqueAddresses(t *testing.T) {
	many := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("reviewer%d@example.com", i)
		}
		return out
	}
	tests := []struct {
		name  string
		value any // nil deletes the field
		want  []string
		field string // the FieldError's Field when rejected
	}{
		{"one", []any{"a@example.com"}, []string{"a@example.com"}, ""},
		{"fifty", many(50), nil, ""},
		{"upper case is lowered", []any{"Ann.Lee@Example.COM"}, []string{"ann.lee@example.com"}, ""},
		{"surrounding spaces trimmed", []any{"  ann@example.com\t"}, []string{"ann@example.com"}, ""},
		{"duplicates after lower-casing collapse, first seen order kept",
			[]any{"bob@example.com", "Ann@Example.com", "ann@example.com", " ANN@EXAMPLE.COM ", "BOB@example.com"},
			[]string{"bob@example.com", "ann@example.com"}, ""},
		{"plus addressing", []any{"ann+reviews@example.com"}, []string{"ann+reviews@example.com"}, ""},
		{"missing", nil, nil, "recipients"},
		{"null", json.RawMessage(`null`), nil, "recipients"},
		{"empty", []any{}, nil, "recipients"},
		{"fifty-one", many(51), nil, "recipients"},
		{"a string, not an array", "a@example.com", nil, "recipients"},
		{"display name", []any{"Ann Lee <ann@example.com>"}, nil, "recipients[0]"},
		{"quoted display name", []any{`"Lee, Ann" <ann@example.com>`}, nil, "recipients[0]"},
		{"angle brackets only", []any{"<ann@example.com>"}, nil, "recipients[0]"},
		{"comment", []any{"ann@example.com (Ann)"}, nil, "recipients[0]"},
		{"two addresses in one entry", []any{"ann@example.com, bob@example.com"}, nil, "recipients[0]"},
		{"no domain", []any{"ann"}, nil, "recipients[0]"},
		{"no dot in domain", []any{"ann@localhost"}, nil, "recipients[0]"},
		{"empty string", []any{""}, nil, "recipients[0]"},
		{"second entry bad", []any{"ann@example.com", "Bob <bob@example.com>"}, nil, "recipients[1]"},
		{"last of fifty bad", append(many(49), "not-an-address"), nil, "recipients[49]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := genFields()
			if tt.value == nil {
				delete(f, "recipients")
			} else {
				f["recipients"] = tt.value
			}
			c, err := genParse(genSigned(genJSON(t, f)))
			if tt.field != "" {
				genWantFieldError(t, err, tt.field)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tt.want
			if want == nil {
				for _, r := range tt.value.([]any) {
					want = append(want, r.(string))
				}
			}
			if !reflect.DeepEqual(c.Recipients, want) {
				t.Errorf("Recipients = %q; want %q", c.Recipients, want)
			}
		})
	}
}

// Errors about a recipient name its index, never the address: the error is
// logged and returned, and an address is personal data.
func TestGenericParse_RecipientErrorNeverContainsAddress(t *testing.T) {
	bad := []string{
		"Zed Quinlan <zed.quinlan@corp-private.example>",
		"zed.quinlan@corp-private@example",
		"zed.quinlan.corp-private.example",
		"<zed.quinlan@corp-private.example>",
		"zed.quinlan@corp-private.example (Zed Quinlan)",
	}
	for i, addr := range bad {
		t.Run(addr, func(t *testing.T) {
			f := genFields()
			f["recipients"] = []any{"ok@example.com", addr}
			_, err := genParse(genSigned(genJSON(t, f)))
			fe := genWantFieldError(t, err, "recipients[1]")
			for _, piece := range []string{addr, "zed", "Zed", "quinlan", "corp-private"} {
				if strings.Contains(err.Error(), piece) || strings.Contains(fe.Message, piece) {
					t.Errorf("case %d: error %q contains %q from the address", i, err.Error(), piece)
				}
			}
		})
	}
}

// Exactly one of diff (at most MaxDiff, 768 KiB, of UTF-8) and diff_url; the error
// names the field to fix.
func TestGenericParse_ExactlyOneOfDiffOrDiffURL(t *testing.T) {
	const diffURL = "https://review.example.com/c/1/raw.diff"
	tests := []struct {
		name    string
		diff    any // nil = absent
		diffURL any // nil = absent
		field   string
	}{
		{"diff only", "+a\n", nil, ""},
		{"diff_url only", nil, diffURL, ""},
		{"diff at MaxDiff", strings.Repeat("+", webhook.MaxDiff), nil, ""},
		{"diff of multibyte text at MaxDiff", strings.Repeat("é", webhook.MaxDiff/2), nil, ""},
		{"diff with null diff_url", "+a\n", json.RawMessage(`null`), ""},
		{"diff_url with null diff", json.RawMessage(`null`), diffURL, ""},
		{"both", "+a\n", diffURL, "diff"},
		{"neither", nil, nil, "diff"},
		{"both null", json.RawMessage(`null`), json.RawMessage(`null`), "diff"},
		{"diff over MaxDiff", strings.Repeat("+", webhook.MaxDiff+1), nil, "diff"},
		{"multibyte diff over MaxDiff", strings.Repeat("é", webhook.MaxDiff/2+1), nil, "diff"},
		{"diff not a string", 42, nil, "diff"},
		{"diff_url not http", nil, "ftp://example.com/x.diff", "diff_url"},
		{"diff_url not a string", nil, []any{diffURL}, "diff_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := genFields()
			delete(f, "diff")
			if tt.diff != nil {
				f["diff"] = tt.diff
			}
			if tt.diffURL != nil {
				f["diff_url"] = tt.diffURL
			}
			c, err := genParse(genSigned(genJSON(t, f)))
			if tt.field != "" {
				genWantFieldError(t, err, tt.field)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if (c.Diff == "") == (c.DiffURL == "") {
				t.Errorf("Diff=%d bytes, DiffURL=%q; want exactly one set", len(c.Diff), c.DiffURL)
			}
			if s, ok := tt.diff.(string); ok && c.Diff != s {
				t.Errorf("Diff changed: got %d bytes, want %d", len(c.Diff), len(s))
			}
		})
	}
}

// An empty inline diff is neither a diff nor a diff_url: there is nothing to
// review, and the Change would carry neither.
func TestGenericParse_EmptyDiffIsRejected(t *testing.T) {
	f := genFields()
	f["diff"] = ""
	c, err := genParse(genSigned(genJSON(t, f)))
	if err == nil {
		t.Fatalf("accepted an empty diff: Diff=%q DiffURL=%q", c.Diff, c.DiffURL)
	}
	genWantFieldError(t, err, "diff")
}

// The diff must be UTF-8 text. encoding/json silently replaces invalid
// UTF-8 bytes with U+FFFD, so a Latin-1 or binary diff would otherwise be
// critiqued (and quoted to reviewers) in corrupted form.
func TestGenericParse_NonUTF8DiffIsRejected(t *testing.T) {
	body := []byte(`{"changelist_id":"c-1","review_version":1,"title":"t","url":"https://example.com/c/1","author":"a","recipients":["a@example.com"],"diff":"+caf` + "\xe9" + `\n"}`)
	c, err := genParse(genSigned(body))
	if err == nil {
		t.Fatalf("accepted a non-UTF-8 diff; Diff = %q (valid UTF-8: %v)", c.Diff, utf8.ValidString(c.Diff))
	}
	genWantFieldError(t, err, "diff")
}

// Unknown fields are rejected naming the field, so a typo such as
// "reviewers" or "diffurl" is not silently ignored.
// Rules: R-INTAKE-4.
func TestGenericParse_UnknownFieldRejectedNamingIt(t *testing.T) {
	for _, name := range []string{"reviewers", "diffurl", "review_versions", "priority", "x"} {
		t.Run(name, func(t *testing.T) {
			f := genFields()
			f[name] = "value"
			_, err := genParse(genSigned(genJSON(t, f)))
			genWantFieldError(t, err, name)
		})
	}
}

// The body is exactly one JSON object: trailing data after it, or anything
// that is not an object, is rejected naming "body".
func TestGenericParse_BodyMustBeOneJSONObject(t *testing.T) {
	valid := genJSON(t, genFields())
	tests := []struct {
		name string
		body []byte
		ok   bool
	}{
		{"trailing whitespace is fine", append(append([]byte{}, valid...), " \n\t\r\n"...), true},
		{"second object", append(append([]byte{}, valid...), ` {}`...), false},
		{"same object twice", append(append([]byte{}, valid...), valid...), false},
		{"trailing garbage", append(append([]byte{}, valid...), ` x`...), false},
		{"trailing bracket", append(append([]byte{}, valid...), `]`...), false},
		{"trailing number", append(append([]byte{}, valid...), `1`...), false},
		{"array", []byte(`[` + string(valid) + `]`), false},
		{"string", []byte(`"hello"`), false},
		{"empty body", []byte(``), false},
		{"truncated", valid[:len(valid)/2], false},
		{"not JSON", []byte(`changelist_id=1&review_version=2`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := genParse(genSigned(tt.body))
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			genWantFieldError(t, err, "body")
		})
	}
}

// A wrongly typed field is named in the error.
func TestGenericParse_WrongTypeNamesTheField(t *testing.T) {
	tests := []struct {
		field string
		value any
		want  string
	}{
		{"changelist_id", 1042, "changelist_id"},
		{"title", []any{"a"}, "title"},
		{"url", map[string]any{"href": "https://x.example"}, "url"},
		{"author", true, "author"},
		{"recipients", map[string]any{"to": "a@example.com"}, "recipients"},
		{"quiet", "yes", "quiet"},
		{"quiet", 1, "quiet"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			f := genFields()
			f[tt.field] = tt.value
			_, err := genParse(genSigned(genJSON(t, f)))
			genWantFieldError(t, err, tt.want)
		})
	}
	t.Run("recipients element", func(t *testing.T) {
		f := genFields()
		f["recipients"] = []any{"a@example.com", 7}
		_, err := genParse(genSigned(genJSON(t, f)))
		var fe *webhook.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "recipients") {
			t.Fatalf("error %v; want a *FieldError naming recipients", err)
		}
	})
}

// A body over MaxBody (900 KiB) is refused with 413 before anything else
// is looked at; a body of exactly MaxBody is read.
func TestGenericParse_BodyOverMaxBodyIs413(t *testing.T) {
	valid := genJSON(t, genFields())
	atLimit := append(append([]byte{}, valid...), bytes.Repeat([]byte(" "), webhook.MaxBody-len(valid))...)
	if len(atLimit) != 900<<10 {
		t.Fatalf("test body is %d bytes; want 900 KiB", len(atLimit))
	}
	if _, err := genParse(genSigned(atLimit)); err != nil {
		t.Fatalf("body of exactly MaxBody: %v", err)
	}

	over := append(atLimit, ' ')
	for name, r := range map[string]webhook.Request{
		"signed":   genSigned(over),
		"unsigned": genRequest(over, map[string]string{"Idempotency-Key": "k"}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := genParse(r)
			var tl *webhook.TooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("error %v (%T); want *TooLargeError", err, err)
			}
			if got := webhook.Status(err); got != 413 {
				t.Errorf("Status = %d; want 413", got)
			}
		})
	}
}

// Status maps each error kind to its HTTP status, also when wrapped.
func TestStatus_MapsErrorKindsToHTTPStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"auth", &webhook.AuthError{Reason: "x"}, 401},
		{"wrapped auth", fmt.Errorf("generic: %w", &webhook.AuthError{Reason: "x"}), 401},
		{"too large", &webhook.TooLargeError{Limit: webhook.MaxBody}, 413},
		{"wrapped too large", fmt.Errorf("read: %w", &webhook.TooLargeError{Limit: 1}), 413},
		{"field", &webhook.FieldError{Field: "title", Message: "is required"}, 400},
		{"wrapped field", fmt.Errorf("parse: %w", &webhook.FieldError{Field: "url", Message: "bad"}), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhook.Status(tt.err); got != tt.want {
				t.Errorf("Status(%v) = %d; want %d", tt.err, got, tt.want)
			}
		})
	}
}

// A FieldError's text starts with the field, so a caller reading only the
// message knows what to fix.
func TestFieldError_MessageNamesField(t *testing.T) {
	err := &webhook.FieldError{Field: "recipients[2]", Message: "must be an email address"}
	if got := err.Error(); !strings.HasPrefix(got, "recipients[2]") {
		t.Errorf("Error() = %q; want it to start with the field", got)
	}
}
