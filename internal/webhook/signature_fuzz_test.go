package webhook

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzBodies are the recorded webhook payloads (testdata/*/*.json and the
// generic sample in events/): the signature verifiers' seed bodies.
func fuzzBodies(f *testing.F) [][]byte {
	f.Helper()
	names, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	names = append(names, filepath.Join("..", "..", "events", "generic-webhook.json"))
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out, nil, []byte("{}"))
}

// checkAuthError holds for every rejection by a verifier: it is an
// *AuthError (HTTP 401) whose message does not give away the signature the
// verifier expected (the reason helps the sender fix its setup, not forge a
// request). Only MACs are checked: a fuzzed secret can be a substring of a
// fixed reason.
func checkAuthError(t *testing.T, err error, macs ...string) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Reason == "" {
		t.Fatalf("rejection is not an *AuthError with a reason: %T %v", err, err)
	}
	for _, m := range macs {
		if strings.Contains(err.Error(), m) {
			t.Fatalf("error %q leaks the expected signature", err)
		}
	}
}

// FuzzVerifySHA256 is the X-Criticizer-Signature / X-Hub-Signature-256
// verifier (generic and GitHub sources). Properties: verify(sign(body)) is
// true for every non-empty secret and body; a header is accepted exactly
// when it is "sha256=" and the hex of the body's HMAC (hex digits of either
// case); changing one byte of the body or the secret breaks the
// signature; every rejection is an *AuthError that does not leak the
// expected MAC.
func FuzzVerifySHA256(f *testing.F) {
	secret := []byte("test-webhook-secret-3f9a")
	for _, b := range fuzzBodies(f) {
		sig := Sign(secret, b)
		f.Add(secret, b, sig)
		f.Add(secret, b, strings.ToUpper(sig))
		f.Add(secret, b, "sha256="+strings.ToUpper(strings.TrimPrefix(sig, "sha256=")))
		f.Add(secret, b, "sha1="+strings.TrimPrefix(sig, "sha256="))
	}
	f.Add([]byte{}, []byte("{}"), "sha256=")
	f.Add([]byte("k"), []byte("{}"), "sha256=zz")
	f.Add([]byte("k"), []byte("{}"), " sha256="+strings.Repeat("0", 64))

	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		mac := strings.TrimPrefix(Sign(secret, body), "sha256=")
		err := verifySHA256(secret, header, body)
		if len(secret) == 0 {
			checkAuthError(t, err)
			return
		}
		hexSig, ok := strings.CutPrefix(header, "sha256=")
		want := ok && strings.EqualFold(hexSig, mac)
		if (err == nil) != want {
			t.Fatalf("verify(%q) = %v, want accepted=%v", header, err, want)
		}
		if err != nil {
			checkAuthError(t, err, mac)
		}
		if err := verifySHA256(secret, Sign(secret, body), body); err != nil {
			t.Fatalf("verify(sign(body)) = %v", err)
		}
		if len(body) > 0 {
			tampered := bytes.Clone(body)
			tampered[len(tampered)/2] ^= 0x01
			if verifySHA256(secret, Sign(secret, body), tampered) == nil {
				t.Fatal("a signature verified a different body")
			}
		}
		other := append(bytes.Clone(secret), 'x')
		if verifySHA256(other, Sign(secret, body), body) == nil {
			t.Fatal("a signature verified under another secret")
		}
	})
}

// FuzzVerifyStandardWebhook is GitLab's signing-token verifier (Standard
// Webhooks: webhook-id, webhook-timestamp, webhook-signature). Properties:
// verify(sign(id, ts, body)) is true at the signing time for any key, id
// and timestamp, also when the header lists other entries first (key
// rotation); the same signature fails for another id, timestamp or body and
// outside the tolerance window; an arbitrary header never panics and is
// rejected with an *AuthError unless it carries the right MAC.
func FuzzVerifyStandardWebhook(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	for i, b := range fuzzBodies(f) {
		f.Add(key, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", int64(1700000000+i), b, "")
	}
	f.Add(key, "x", int64(0), []byte("{}"), "v1,AAAA v2,BBBB")
	f.Add([]byte{1}, "id", int64(-1), []byte(""), "v1,")
	f.Add([]byte{1}, "id", int64(9223372036), []byte("{}"), "v1a,x v1,!!")

	const tol = 5 * time.Minute
	f.Fuzz(func(t *testing.T, key []byte, id string, ts int64, body []byte, header string) {
		if len(key) == 0 {
			key = []byte{0}
		}
		secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
		stamp := strconv.FormatInt(ts, 10)
		now := time.Unix(ts, 0)
		mac := base64.StdEncoding.EncodeToString(standardWebhookMAC(key, id, stamp, body))

		if err := verifyStandardWebhook(secret, id, stamp, header, body, now, tol); err != nil {
			checkAuthError(t, err, mac)
		}
		sig, err := SignStandardWebhook(secret, id, ts, body)
		if err != nil {
			t.Fatalf("sign: %v", err)
		}
		err = verifyStandardWebhook(secret, id, stamp, sig, body, now, tol)
		if id == "" {
			checkAuthError(t, err)
			return
		}
		if err != nil {
			t.Fatalf("verify(sign) = %v", err)
		}
		if err := verifyStandardWebhook(secret, id, stamp, "v2,x v1,AAAA "+sig, body, now, tol); err != nil {
			t.Fatalf("rotation list with the right entry last: %v", err)
		}
		if verifyStandardWebhook(secret, id+"x", stamp, sig, body, now, tol) == nil {
			t.Fatal("signature verified for another webhook-id")
		}
		if verifyStandardWebhook(secret, id, stamp, sig, append(bytes.Clone(body), 'x'), now, tol) == nil {
			t.Fatal("signature verified for another body")
		}
		if ts < 1<<40 && verifyStandardWebhook(secret, id, stamp, sig, body, now.Add(tol+time.Second), tol) == nil {
			t.Fatal("signature verified outside the tolerance window")
		}
	})
}

// FuzzTokenAuth covers the shared-token checks (GitLab X-Gitlab-Token,
// Gerrit X-Criticizer-Token or ?token=): the constant-time comparison is
// plain equality, and Gerrit accepts a request exactly when at least one
// token is presented and every presented token equals the configured one.
func FuzzTokenAuth(f *testing.F) {
	f.Add("s3cret-token", "s3cret-token", "", "s3cret-token")
	f.Add("s3cret-token", "s3cret-token", "s3cret-token", "s3cret-token")
	f.Add("s3cret-token", "", "wrong", "s3cret-token")
	f.Add("", "", "", "")
	f.Add("S3cret-token", "s3cret-token\x00", "", "s3cret-token")
	f.Fuzz(func(t *testing.T, header, query, extra, configured string) {
		if got := constantTimeTokenEqual(header, []byte(configured)); got != (header == configured) {
			t.Fatalf("constantTimeTokenEqual(%q, %q) = %v", header, configured, got)
		}
		h := map[string]string{GerritTokenHeader: header, GerritQueryTokenHeader: query}
		err := Gerrit{Token: []byte(configured)}.authenticate(func(name string) string { return h[name] })
		presented, ok := 0, true
		for _, v := range []string{header, query} {
			if v != "" {
				presented++
				ok = ok && v == configured
			}
		}
		want := configured != "" && presented > 0 && ok
		if (err == nil) != want {
			t.Fatalf("gerrit authenticate(header %q, query %q, token %q) = %v, want accepted=%v", header, query, configured, err, want)
		}
		if err != nil {
			checkAuthError(t, err)
		}
		if configured != "" && extra != configured {
			g := GitLab{Token: []byte(configured)}
			if g.authenticate(func(string) string { return extra }, nil) == nil {
				t.Fatalf("gitlab accepted token %q for %q", extra, configured)
			}
		}
	})
}
