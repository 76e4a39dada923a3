// Package unsubscribe holds the signed tokens of the List-Unsubscribe links
// (RFC 8058) and the scopes a recipient can leave: one repository's
// critiques, or all of them.
//
// A token names a recipient by an opaque id (RecipientID), never by address:
// the link travels through mail clients, proxies and access logs. It is
// signed with HMAC-SHA-256 under a key only the notifier (which mints links)
// and the API (which honours them) hold, so it cannot be guessed or altered:
// an attacker who knows an address still cannot unsubscribe it.
package unsubscribe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// MinKeyLen is the shortest signing key accepted: 32 bytes, the HMAC-SHA-256
// block of entropy an operator-generated secret should carry.
const MinKeyLen = 32

// macLen is how much of the HMAC a token carries: 128 bits, beyond guessing.
const macLen = 16

// ScopeAll is the scope of "stop every Criticizer email".
const ScopeAll = "*"

// ErrInvalid is any token that does not verify: malformed, altered or signed
// with another key. The endpoint treats it like a valid one (no enumeration);
// the error is for logs and tests.
var ErrInvalid = errors.New("unsubscribe token is invalid")

// Claims is what a verified token says.
type Claims struct {
	RecipientID string // RecipientID of the address the email went to
	Scope       string // a Repository key, or ScopeAll
}

// RecipientID is the opaque, stable id of an address under which preferences
// and suppressions are stored: the same for every spelling NormalizeRecipient
// folds together.
func RecipientID(addr string) string {
	return "r_" + job.Digest("recipient", delivery.NormalizeRecipient(addr))
}

// Repository is the scope of "this repository's critiques" for a changelist:
// the source and the repository part of the changelist id ("owner/repo" of
// "owner/repo#7", "group/proj" of "group/proj!3", "project" of
// "project~42"). A generic changelist id without one of those separators
// has no repository: its scope is the source itself.
func Repository(source, changelistID string) string {
	if i := strings.LastIndexAny(changelistID, "#!~"); i > 0 {
		return source + ":" + changelistID[:i]
	}
	return source + ":"
}

// Signer mints and verifies tokens with one key.
type Signer struct {
	key []byte
}

// NewSigner returns a signer, refusing a key shorter than MinKeyLen.
func NewSigner(key string) (*Signer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("unsubscribe signing key: %d bytes, need at least %d", len(key), MinKeyLen)
	}
	return &Signer{key: []byte(key)}, nil
}

var enc = base64.RawURLEncoding

// Token returns the token for a recipient and a scope: base64url(payload)
// "." base64url(mac), URL-path safe.
func (s *Signer) Token(recipientID, scope string) string {
	payload := "v1\n" + recipientID + "\n" + scope
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(s.mac(payload))
}

// Verify checks a token and returns its claims, or ErrInvalid. The MAC is
// compared in constant time.
func (s *Signer) Verify(token string) (Claims, error) {
	p, m, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1024 {
		return Claims{}, ErrInvalid
	}
	payload, err := enc.DecodeString(p)
	if err != nil {
		return Claims{}, ErrInvalid
	}
	mac, err := enc.DecodeString(m)
	if err != nil || !hmac.Equal(mac, s.mac(string(payload))) {
		return Claims{}, ErrInvalid
	}
	parts := strings.Split(string(payload), "\n")
	if len(parts) != 3 || parts[0] != "v1" || !strings.HasPrefix(parts[1], "r_") || parts[2] == "" {
		return Claims{}, ErrInvalid
	}
	return Claims{RecipientID: parts[1], Scope: parts[2]}, nil
}

func (s *Signer) mac(payload string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("criticizer-unsubscribe\n"))
	h.Write([]byte(payload))
	return h.Sum(nil)[:macLen]
}

// URL is the unsubscribe link for a recipient and scope under the API's
// public base URL, or "" when there is no base URL or signer.
func (s *Signer) URL(baseURL, recipientID, scope string) string {
	if s == nil || baseURL == "" {
		return ""
	}
	return strings.TrimRight(baseURL, "/") + "/unsubscribe/" + s.Token(recipientID, scope)
}
