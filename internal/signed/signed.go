// Package signed signs short payloads into URL-safe tokens and opens them:
// the one format the unsubscribe, vote and preference links and the reply
// addresses share, and the one way their keys are derived from the
// unsubscribe key (Derive), so they cannot drift apart in how they are
// checked or rotated.
//
// A token is base64url(payload) "." base64url(mac), the mac the first 128
// bits of HMAC-SHA-256 over a purpose label and the payload; the label
// keeps a token minted for one purpose from verifying for another under
// the same key. No library is used: the standard library's crypto/hmac
// is all it takes, and a JWT library would add a header, algorithm choice
// and 3× the length to a link that must fit a mail header (R-LIMIT-2).
package signed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"strings"
)

// macLen is how much of the HMAC a token carries: 128 bits, beyond
// guessing.
const macLen = 16

// MaxTokenLen bounds what Verify reads, so a hostile link costs nothing.
const MaxTokenLen = 1024

// Keys are a purpose's signing keys: Current mints and verifies; Previous,
// during a key rotation, verifies only (nil outside one).
type Keys struct {
	Purpose           string
	Current, Previous []byte
}

// MinKeyLen is the shortest root key accepted: the unsubscribe key's
// minimum, which every purpose's keys are derived from.
const MinKeyLen = 32

// Derive returns a purpose's keys: Current is HMAC(root, label), Previous
// the same of previous during a rotation (at most one; "" or none: no
// rotation). Each purpose derives under a label of its own, so no MAC of
// one kind of token is ever valid as another even before Purpose is
// mixed in. what names the keys in errors, which never carry a key. The
// vote, preference and reply signers all derive theirs here, from the
// unsubscribe key.
func Derive(purpose, label, what, root string, previous ...string) (Keys, error) {
	if len(root) < MinKeyLen {
		return Keys{}, fmt.Errorf("%s signing key: %d bytes, need at least %d", what, len(root), MinKeyLen)
	}
	k := Keys{Purpose: purpose, Current: derive(root, label)}
	switch {
	case len(previous) > 1:
		return Keys{}, fmt.Errorf("%s signing key: %d previous keys, at most one", what, len(previous))
	case len(previous) == 1 && previous[0] != "":
		if len(previous[0]) < MinKeyLen {
			return Keys{}, fmt.Errorf("previous %s signing key: %d bytes, need at least %d", what, len(previous[0]), MinKeyLen)
		}
		k.Previous = derive(previous[0], label)
	}
	return k, nil
}

// derive is HMAC(root, label).
func derive(root, label string) []byte {
	h := hmac.New(sha256.New, []byte(root))
	h.Write([]byte(label))
	return h.Sum(nil)
}

// Rotating reports whether a previous key still verifies.
func (k Keys) Rotating() bool { return k.Previous != nil }

// Sign returns payload's token under the current key.
func (k Keys) Sign(payload string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(k.mac(k.Current, payload))
}

// Verify checks token and returns its payload; false for a token that is
// malformed, too long, or signed under neither key. The macs are
// compared in constant time, and both comparisons always run, so the time
// taken does not say which key (if any) matched.
func (k Keys) Verify(token string) (string, bool) {
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
	return k.macFull(key, payload)[:macLen]
}

// macFull is the whole HMAC, for the short form's own cut.
func (k Keys) macFull(key []byte, payload string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(k.Purpose + "\n"))
	h.Write([]byte(payload))
	return h.Sum(nil)
}

// The short form seals bytes into one case-insensitive word: payload and a
// truncated mac, in lower-case base32 without padding. It is for a mail
// address's local part (internal/inbound), which RFC 5321 §4.5.3.1.1
// bounds at 64 octets and which mail systems may fold to lower or upper
// case on the way back: base64's two cases would not survive. The mac is
// the same purpose-labelled HMAC as Sign's, cut to macLen bytes (the
// caller weighs the length against the room it has).
var short = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// SignShort returns payload's short token under the current key, with a
// mac of macLen bytes (1 to 32).
func (k Keys) SignShort(payload []byte, macLen int) string {
	return short.EncodeToString(append(append([]byte{}, payload...), k.macFull(k.Current, string(payload))[:macLen]...))
}

// VerifyShort checks a short token signed with a mac of macLen bytes, in
// either case, and returns its payload; false for a token that is
// malformed, longer than MaxTokenLen, or signed under neither key. As in
// Verify, both comparisons always run.
func (k Keys) VerifyShort(token string, macLen int) ([]byte, bool) {
	if len(token) > MaxTokenLen {
		return nil, false
	}
	b, err := short.DecodeString(strings.ToLower(token))
	if err != nil || len(b) < macLen || macLen < 1 || macLen > sha256.Size {
		return nil, false
	}
	payload, got := b[:len(b)-macLen], b[len(b)-macLen:]
	valid := hmac.Equal(got, k.macFull(k.Current, string(payload))[:macLen])
	if k.Previous != nil {
		prev := hmac.Equal(got, k.macFull(k.Previous, string(payload))[:macLen])
		valid = valid || prev
	}
	if !valid {
		return nil, false
	}
	return payload, true
}
