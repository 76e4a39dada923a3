// Package vote holds the signed links by which a reader says a finding
// was useful or wrong (R-VOTE-1), and the vote they record.
//
// A link names the email by its delivery id (opaque: a digest of the
// changelist, the recipient and the version), the finding by FindingID,
// the choice, the finding's rule (what make eval reports by) and an
// expiry; never an address. It is signed with HMAC-SHA-256 under a key
// derived from the unsubscribe key, so the notifier (which mints links)
// and the API (which honours them) share one secret and a vote token can
// never pass for an unsubscribe token or the reverse.
package vote

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/signed"
)

// Choice is what a reader says of a finding.
type Choice string

// The two choices a link can carry.
const (
	Useful Choice = "useful"
	Wrong  Choice = "wrong"
)

// Valid reports whether c is one of the two choices.
func (c Choice) Valid() bool { return c == Useful || c == Wrong }

// LinkLifetime is how long a vote link works after the email was
// rendered: a finding is judged while its change is under review, and a
// forwarded or leaked email stops voting a month on.
const LinkLifetime = 30 * 24 * time.Hour

// maxRule bounds the rule a token carries: a model names its rules, and a
// link must stay short whatever it wrote.
const maxRule = 64

// macLen is how much of the HMAC a token carries: 128 bits.
const macLen = 16

// ErrInvalid is a token that does not verify: malformed, altered or signed
// with another key.
var ErrInvalid = errors.New("vote token is invalid")

// ErrExpired is a token that verifies but whose link has expired.
var ErrExpired = errors.New("vote token has expired")

// Claims is what a verified token says.
type Claims struct {
	DeliveryID string // the email the link was in
	FindingID  string // FindingID of the finding
	Choice     Choice
	Rule       string    // the finding's rule, cut to 64 bytes
	Expires    time.Time // the link's end, whole seconds
}

// FindingID is the short, stable id of a finding within an email: a
// digest of its file, line, rule and message, so two findings on one line
// under one rule still get their own votes.
func FindingID(f critic.Finding) string {
	return job.Hash("finding", f.File, strconv.Itoa(f.Line), f.Rule, f.Message)[:16]
}

// Signer mints vote tokens and verifies them under the current key or,
// during a rotation, the previous one (as unsubscribe.Signer does).
type Signer struct {
	k signed.Keys
}

// MinKeyLen is the shortest key accepted, the unsubscribe key's minimum.
const MinKeyLen = signed.MinKeyLen

// NewSigner derives the vote keys from the unsubscribe key and, when one
// is given, the previous unsubscribe key. Errors never carry a key.
func NewSigner(unsubscribeKey string, previous ...string) (*Signer, error) {
	k, err := signed.Derive("criticizer-vote", "criticizer-vote-key/v1", "vote", unsubscribeKey, previous...)
	if err != nil {
		return nil, err
	}
	return &Signer{k: k}, nil
}

// String keeps the keys out of fmt output.
func (s Signer) String() string { return fmt.Sprintf("vote.Signer{rotating: %t}", s.k.Rotating()) }

// GoString is String for %#v.
func (s Signer) GoString() string { return s.String() }

// LogValue is String for log/slog.
func (s Signer) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Token returns the token of one choice on one finding of one email:
// base64url(payload) "." base64url(mac), URL-path safe.
func (s *Signer) Token(deliveryID string, f critic.Finding, c Choice, expires time.Time) string {
	rule := f.Rule
	if len(rule) > maxRule {
		rule = strings.ToValidUTF8(rule[:maxRule], "")
	}
	rule = strings.NewReplacer("\n", " ", "\r", " ").Replace(rule)
	payload := strings.Join([]string{"v1", deliveryID, FindingID(f), string(c), strconv.FormatInt(expires.Unix(), 10), rule}, "\n")
	return s.keys().Sign(payload)
}

// Verify checks a token at now and returns its claims: ErrInvalid for a
// token that does not verify, ErrExpired (with the claims) for one past
// its expiry. The MAC is compared in constant time under both keys.
func (s *Signer) Verify(token string, now time.Time) (Claims, error) {
	payload, ok := s.keys().Verify(token)
	if !ok {
		return Claims{}, ErrInvalid
	}
	parts := strings.SplitN(payload, "\n", 6)
	if len(parts) != 6 || parts[0] != "v1" || !strings.HasPrefix(parts[1], "d_") || parts[2] == "" {
		return Claims{}, ErrInvalid
	}
	exp, err := strconv.ParseInt(parts[4], 10, 64)
	c := Claims{DeliveryID: parts[1], FindingID: parts[2], Choice: Choice(parts[3]), Expires: time.Unix(exp, 0).UTC(), Rule: parts[5]}
	if err != nil || !c.Choice.Valid() {
		return Claims{}, ErrInvalid
	}
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	return c, nil
}

// keys are the signer's keys under the vote purpose label.
func (s *Signer) keys() signed.Keys {
	return s.k
}

// Links mints the two links of a finding under the API's public base URL,
// or "" and "" when there is no base URL or signer (no links are shown).
func (s *Signer) Links(baseURL, deliveryID string, f critic.Finding, expires time.Time) (useful, wrong string) {
	if s == nil || baseURL == "" {
		return "", ""
	}
	base := strings.TrimRight(baseURL, "/") + "/vote/"
	return base + s.Token(deliveryID, f, Useful, expires), base + s.Token(deliveryID, f, Wrong, expires)
}
