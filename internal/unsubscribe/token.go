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
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/signed"
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
	return "r_" + job.Hash("recipient", delivery.NormalizeRecipient(addr))
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

// Signer mints tokens with its current key and verifies them under the
// current key or the previous one. The previous key is what makes rotation
// safe: links in emails already delivered were signed with it, and an
// invalid token is answered like a valid one (no enumeration), so without
// it a recipient following an old link would be told "unsubscribed" while
// nothing is recorded.
type Signer struct {
	key      []byte // mints and verifies
	previous []byte // verifies only; nil outside a rotation
}

// NewSigner returns a signer that mints with key and also accepts tokens
// signed with previous, when one is given (an empty previous is the
// optional setting left unset). Each key must be at least MinKeyLen bytes;
// errors name which key is short, never its value.
func NewSigner(key string, previous ...string) (*Signer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("unsubscribe signing key: %d bytes, need at least %d", len(key), MinKeyLen)
	}
	s := &Signer{key: []byte(key)}
	switch {
	case len(previous) > 1:
		return nil, fmt.Errorf("unsubscribe signing key: %d previous keys, at most one", len(previous))
	case len(previous) == 1 && previous[0] != "":
		if len(previous[0]) < MinKeyLen {
			return nil, fmt.Errorf("previous unsubscribe signing key: %d bytes, need at least %d", len(previous[0]), MinKeyLen)
		}
		s.previous = []byte(previous[0])
	}
	return s, nil
}

// Rotating reports whether the signer also accepts the previous key's
// tokens (for a startup log line; the keys themselves are never logged).
func (s *Signer) Rotating() bool { return s != nil && s.previous != nil }

// String, GoString and LogValue keep the keys out of fmt and slog output
// should a Signer ever be printed or logged.
func (s Signer) String() string {
	return fmt.Sprintf("unsubscribe.Signer{rotating: %t}", s.previous != nil)
}

// GoString is String for %#v.
func (s Signer) GoString() string { return s.String() }

// LogValue is String for log/slog.
func (s Signer) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Token returns the token for a recipient and a scope: base64url(payload)
// "." base64url(mac), URL-path safe. It is always signed with the current
// key.
func (s *Signer) Token(recipientID, scope string) string {
	payload := "v1\n" + recipientID + "\n" + scope
	return s.keys().Sign(payload)
}

// Verify checks a token and returns its claims, or ErrInvalid. The MAC is
// compared in constant time against the current key's and, during a
// rotation, the previous key's; both comparisons always run, so the time
// taken does not say which key (if any) matched.
func (s *Signer) Verify(token string) (Claims, error) {
	payload, ok := s.keys().Verify(token)
	if !ok {
		return Claims{}, ErrInvalid
	}
	parts := strings.Split(payload, "\n")
	if len(parts) != 3 || parts[0] != "v1" || !strings.HasPrefix(parts[1], "r_") || parts[2] == "" {
		return Claims{}, ErrInvalid
	}
	return Claims{RecipientID: parts[1], Scope: parts[2]}, nil
}

// keys are the signer's keys under the unsubscribe purpose label.
func (s *Signer) keys() signed.Keys {
	return signed.Keys{Purpose: "criticizer-unsubscribe", Current: s.key, Previous: s.previous}
}

// URL is the unsubscribe link for a recipient and scope under the API's
// public base URL, or "" when there is no base URL or signer.
func (s *Signer) URL(baseURL, recipientID, scope string) string {
	if s == nil || baseURL == "" {
		return ""
	}
	return strings.TrimRight(baseURL, "/") + "/unsubscribe/" + s.Token(recipientID, scope)
}
