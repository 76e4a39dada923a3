package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Sign returns the `sha256=<hex>` HMAC-SHA256 signature of body under secret,
// the format of X-Criticizer-Signature (and of GitHub's X-Hub-Signature-256).
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// verifySHA256 checks a `sha256=<hex>` signature over the raw body in
// constant time. The raw body is what was signed: verifying a re-encoded body
// would reject valid requests and could accept forged ones.
func verifySHA256(secret []byte, header string, body []byte) error {
	if len(secret) == 0 {
		return &AuthError{Reason: "no webhook secret is configured"}
	}
	if header == "" {
		return &AuthError{Reason: "signature header is missing"}
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return &AuthError{Reason: "signature must have the form sha256=<hex>"}
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return &AuthError{Reason: "signature is not 64 hex digits"}
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return &AuthError{Reason: "signature does not match the body"}
	}
	return nil
}
