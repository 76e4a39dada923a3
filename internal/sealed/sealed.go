// Package sealed signs short payloads into URL-safe tokens and opens them:
// the one format the unsubscribe and vote links share, so the two cannot
// drift apart in how they are checked.
//
// A token is base64url(payload) "." base64url(mac), the mac the first 128
// bits of HMAC-SHA-256 over a purpose label and the payload; the label
// keeps a token minted for one purpose from verifying for another under
// the same key. No library is used: the standard library's crypto/hmac
// is all it takes, and a JWT library would add a header, algorithm choice
// and 3× the length to a link that must fit a mail header (R-LIMIT-2).
package sealed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// macLen is how much of the HMAC a token carries: 128 bits, beyond
// guessing.
const macLen = 16

// MaxTokenLen bounds what Open reads, so a hostile link costs nothing.
const MaxTokenLen = 1024

// Keys are a purpose's signing keys: Current mints and verifies; Previous,
// during a key rotation, verifies only (nil outside one).
type Keys struct {
	Purpose           string
	Current, Previous []byte
}

// Seal returns payload's token under the current key.
func (k Keys) Seal(payload string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(k.mac(k.Current, payload))
}

// Open checks token and returns its payload; false for a token that is
// malformed, too long, or signed under neither key. The macs are
// compared in constant time, and both comparisons always run, so the time
// taken does not say which key (if any) matched.
func (k Keys) Open(token string) (string, bool) {
	enc := base64.RawURLEncoding
	p, m, ok := strings.Cut(token, ".")
	if !ok || len(token) > MaxTokenLen {
		return "", false
	}
	payload, err := enc.DecodeString(p)
	if err != nil {
		return "", false
	}
	got, err := enc.DecodeString(m)
	if err != nil {
		return "", false
	}
	valid := hmac.Equal(got, k.mac(k.Current, string(payload)))
	if k.Previous != nil {
		prev := hmac.Equal(got, k.mac(k.Previous, string(payload)))
		valid = valid || prev
	}
	if !valid {
		return "", false
	}
	return string(payload), true
}

func (k Keys) mac(key []byte, payload string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(k.Purpose + "\n"))
	h.Write([]byte(payload))
	return h.Sum(nil)[:macLen]
}
