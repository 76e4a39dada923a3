package prefs

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/signed"
)

// The preference page's link (R-PREF-2), in every email's footer: it
// names the recipient by their opaque id (unsubscribe.RecipientID), never
// the address, and the repository of the email it came from, so the page
// can offer to mute it; it expires. It is signed like the vote and
// unsubscribe links (internal/signed) under a key derived from the
// unsubscribe key, so the notifier (which mints links) and the API (which
// honours them) share one secret, and a preference token never passes for
// a vote or an unsubscribe token, nor the reverse.

// LinkLifetime is how long a preference link works after the email was
// rendered. Longer than a vote link's 30 days: a reader looks for
// "preferences" in whatever email they have at hand, often an old one;
// still bounded, so a forwarded or leaked email stops opening the page.
const LinkLifetime = 90 * 24 * time.Hour

// MinKeyLen is the shortest key accepted, the unsubscribe key's minimum.
const MinKeyLen = signed.MinKeyLen

// ErrInvalid is a token that does not verify: malformed, altered or signed
// with another key.
var ErrInvalid = errors.New("preference token is invalid")

// ErrExpired is a token that verifies but whose link has expired.
var ErrExpired = errors.New("preference token has expired")

// Claims is what a verified token says.
type Claims struct {
	RecipientID string    // unsubscribe.RecipientID of the address mailed
	Repository  string    // the email's repository (unsubscribe.Repository); "" for none
	Expires     time.Time // the link's end, whole seconds
}

// Signer mints preference tokens and verifies them under the current key
// or, during a rotation, the previous one (as the unsubscribe and vote
// signers do).
type Signer struct {
	k signed.Keys
}

// NewSigner derives the preference keys from the unsubscribe key and,
// when one is given, the previous unsubscribe key. Errors never carry a
// key.
func NewSigner(unsubscribeKey string, previous ...string) (*Signer, error) {
	k, err := signed.Derive("criticizer-preferences", "criticizer-preferences-key/v1", "preference", unsubscribeKey, previous...)
	if err != nil {
		return nil, err
	}
	return &Signer{k: k}, nil
}

// String keeps the keys out of fmt output.
func (s Signer) String() string {
	return fmt.Sprintf("prefs.Signer{rotating: %t}", s.k.Rotating())
}

// GoString is String for %#v.
func (s Signer) GoString() string { return s.String() }

// LogValue is String for log/slog.
func (s Signer) LogValue() slog.Value { return slog.StringValue(s.String()) }

func (s *Signer) keys() signed.Keys {
	return s.k
}

// Token returns the token of a recipient's page, offering repository,
// until expires: base64url(payload) "." base64url(mac), URL-path safe. A
// repository too long to keep is left out (the page then offers no mute
// of it).
func (s *Signer) Token(recipientID, repository string, expires time.Time) string {
	if len(repository) > MaxRepository {
		repository = ""
	}
	return s.keys().Sign(strings.Join([]string{"v1", recipientID, strconv.FormatInt(expires.Unix(), 10), repository}, "\n"))
}

// Verify checks a token at now and returns its claims: ErrInvalid for a
// token that does not verify, ErrExpired (with the claims) for one past
// its expiry.
func (s *Signer) Verify(token string, now time.Time) (Claims, error) {
	payload, ok := s.keys().Verify(token)
	if !ok {
		return Claims{}, ErrInvalid
	}
	parts := strings.SplitN(payload, "\n", 4)
	if len(parts) != 4 || parts[0] != "v1" || !strings.HasPrefix(parts[1], "r_") {
		return Claims{}, ErrInvalid
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Claims{}, ErrInvalid
	}
	c := Claims{RecipientID: parts[1], Expires: time.Unix(exp, 0).UTC(), Repository: parts[3]}
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	return c, nil
}

// Path is the page's path for a token: "/preferences/" and the token.
func Path(token string) string { return "/preferences/" + token }

// URL is the preference link under the API's public base URL, or "" when
// there is no base URL or signer (the email then has no such link).
func (s *Signer) URL(baseURL, recipientID, repository string, expires time.Time) string {
	if s == nil || baseURL == "" {
		return ""
	}
	return strings.TrimRight(baseURL, "/") + Path(s.Token(recipientID, repository, expires))
}
