// Package inbound is the mail received at the inbound domain: the answer
// an email carries back. Its Reply-To address names the delivery it
// answers by a signed key (R-REPLY-1) (key.go), and a reply
// from the address the delivery was sent to, authenticated by SES's
// verdicts and not an automatic one (R-REPLY-2, R-REPLY-3), is read for a
// short vocabulary of commands (R-REPLY-4): "wrong 3", "useful 2",
// "mute", "unsubscribe", "help" (body.go, commands.go, verdict.go). Each
// reply acted on gets one short confirmation, sent as a delivery like any
// email (R-REPLY-5) (handler.go, run by the reply function).
package inbound

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/signed"
	"github.com/criticizer/criticizer/internal/vote"
)

// LocalPrefix starts the local part of every reply address:
// reply+<key>@<inbound domain>.
const LocalPrefix = "reply+"

// KeyLifetime is how long a reply address works after its email was
// rendered: as long as the email's vote links (vote.LinkLifetime).
const KeyLifetime = vote.LinkLifetime

// A key is, in lower-case base32, version (1 byte) | the delivery id's
// digest (20 bytes) | its expiry in hours since the epoch (3 bytes, good
// until the year 3883) | the first 12 bytes of an HMAC-SHA-256 over them:
// 36 bytes, 58 characters, so "reply+" and the key are exactly the 64
// octets RFC 5321 allows a local part. It names the delivery and nothing
// personal: the delivery id is a digest, the address is not in it.
// 96 bits of mac: a forger guessing keys by sending mail gets one try per
// message, counted and dropped.
//
// A daily digest's key (version 2) names the digest row (R-DIGEST-6),
// whose id holds its due time beside its digest ("g_<unix seconds>_…",
// delivery.DigestID): there is no room for both that time and an expiry,
// so it holds the due time in quarter hours since the epoch (3 bytes,
// good until the year 2448; every due time is on a quarter hour, as
// every time zone's offset is) and expires KeyLifetime after it. A
// digest is rendered when it is closed, at or soon after that time.
const (
	keyVersion       = 1
	digestKeyVersion = 2
	quarterHour      = 15 * 60
	digestLen        = 20
	expiryLen        = 3
	keyMACLen        = 12
	payloadLen       = 1 + digestLen + expiryLen
	// KeyLen is a key's length in characters.
	KeyLen = (8*(payloadLen+keyMACLen) + 4) / 5
)

// ErrInvalid is a key that does not verify: malformed, altered, signed
// with another key, or not a reply address of the inbound domain.
var ErrInvalid = errors.New("reply key is invalid")

// ErrExpired is a key that verifies but whose address has expired.
var ErrExpired = errors.New("reply key has expired")

// digests is job.Digest's alphabet, which delivery ids are written in.
var digests = base32.StdEncoding.WithPadding(base32.NoPadding)

// Keys mint reply keys and open them, under a key derived from the
// unsubscribe key (as vote links are): notify, which mints them, and the
// reply function, which opens them, share one secret, and a reply key can
// never pass for a vote or unsubscribe token.
type Keys struct {
	k signed.Keys
}

// MinKeyLen is the shortest unsubscribe key accepted.
const MinKeyLen = vote.MinKeyLen

// NewKeys derives the reply keys from the unsubscribe key and, during a
// rotation, the previous one. Errors never carry a key.
func NewKeys(unsubscribeKey string, previous ...string) (*Keys, error) {
	k, err := signed.Derive("criticizer-reply", "criticizer-reply-key/v1", "reply", unsubscribeKey, previous...)
	if err != nil {
		return nil, err
	}
	return &Keys{k: k}, nil
}

// String keeps the keys out of fmt output.
func (k Keys) String() string { return fmt.Sprintf("reply.Keys{rotating: %t}", k.k.Rotating()) }

// GoString is String for %#v.
func (k Keys) GoString() string { return k.String() }

// LogValue is String for log/slog.
func (k Keys) LogValue() slog.Value { return slog.StringValue(k.String()) }

func (k *Keys) tokens() signed.Keys {
	return k.k
}

// Key returns the key of delivery deliveryID ("d_" and a job.Digest),
// valid until expires (rounded up to the hour); of a daily digest
// (delivery.DigestID), valid KeyLifetime after the digest is due,
// whatever expires says.
func (k *Keys) Key(deliveryID string, expires time.Time) (string, error) {
	if due, digest, ok := delivery.SplitDigestID(deliveryID); ok {
		return k.digestKey(deliveryID, due, digest)
	}
	digest, ok := strings.CutPrefix(deliveryID, "d_")
	d, err := digests.DecodeString(strings.ToUpper(digest))
	if !ok || err != nil || len(d) != digestLen {
		return "", fmt.Errorf("reply key: %q is not a delivery id", deliveryID)
	}
	hours := (expires.Unix() + 3599) / 3600
	if hours < 0 || hours >= 1<<(8*expiryLen) {
		return "", fmt.Errorf("reply key: expiry %s out of range", expires)
	}
	p := make([]byte, payloadLen)
	p[0] = keyVersion
	copy(p[1:], d)
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(hours))
	copy(p[1+digestLen:], h[1:])
	return k.tokens().SignShort(p, keyMACLen), nil
}

// Open checks key at now and returns the delivery id it names:
// ErrInvalid for a key that does not verify, ErrExpired (with the id)
// for one past its expiry. Case does not matter.
func (k *Keys) Open(key string, now time.Time) (string, error) {
	if len(key) != KeyLen {
		return "", ErrInvalid
	}
	p, ok := k.tokens().VerifyShort(key, keyMACLen)
	if !ok || len(p) != payloadLen || (p[0] != keyVersion && p[0] != digestKeyVersion) {
		return "", ErrInvalid
	}
	var h [4]byte
	copy(h[1:], p[1+digestLen:])
	n := int64(binary.BigEndian.Uint32(h[:]))
	id, expires := "d_"+strings.ToLower(digests.EncodeToString(p[1:1+digestLen])), time.Unix(n*3600, 0)
	if p[0] == digestKeyVersion {
		due := time.Unix(n*quarterHour, 0).UTC()
		id, expires = delivery.JoinDigestID(due, strings.ToLower(digests.EncodeToString(p[1:1+digestLen]))), due.Add(KeyLifetime)
	}
	if !now.Before(expires) {
		return id, ErrExpired
	}
	return id, nil
}

// digestKey is the key of daily digest id, due at due, of digest digest.
func (k *Keys) digestKey(id string, due time.Time, digest string) (string, error) {
	d, err := digests.DecodeString(strings.ToUpper(digest))
	if err != nil || len(d) != digestLen {
		return "", fmt.Errorf("reply key: %q is not a digest id", id)
	}
	q := due.Unix() / quarterHour
	if due.Unix()%quarterHour != 0 || q < 0 || q >= 1<<(8*expiryLen) {
		return "", fmt.Errorf("reply key: digest due at %s, not on a quarter hour in range", due)
	}
	p := make([]byte, payloadLen)
	p[0] = digestKeyVersion
	copy(p[1:], d)
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(q))
	copy(p[1+digestLen:], h[1:])
	return k.tokens().SignShort(p, keyMACLen), nil
}

// Address is the reply address of delivery deliveryID under the inbound
// domain, valid until expires.
func (k *Keys) Address(domain, deliveryID string, expires time.Time) (string, error) {
	key, err := k.Key(deliveryID, expires)
	if err != nil {
		return "", err
	}
	return LocalPrefix + key + "@" + strings.ToLower(domain), nil
}

// KeyOf is the key of a reply address at the inbound domain: the local
// part after LocalPrefix, in any case; false for any other address.
func KeyOf(addr, domain string) (string, bool) {
	addr = strings.TrimSpace(addr)
	at := strings.LastIndexByte(addr, '@')
	if at < 0 || domain == "" || !strings.EqualFold(strings.TrimSuffix(addr[at+1:], "."), domain) {
		return "", false
	}
	local := addr[:at]
	if len(local) <= len(LocalPrefix) || !strings.EqualFold(local[:len(LocalPrefix)], LocalPrefix) {
		return "", false
	}
	return strings.ToLower(local[len(LocalPrefix):]), true
}
