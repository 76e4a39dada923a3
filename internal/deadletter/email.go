package deadletter

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// HashEmail returns the stable pseudonym Redact substitutes for an email
// address: "email:" and the first 12 hex digits of the SHA-256 of the
// trimmed, lower-cased address. Operators can compute it for a known
// recipient to find that recipient's dead letters without the envelope ever
// storing the address.
func HashEmail(addr string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(addr))))
	return "email:" + hex.EncodeToString(sum[:])[:12]
}

var (
	// emailRun is a maximal run of address characters containing an '@'.
	// Email redaction works on whole runs so that removing one address can
	// never glue its neighbours into a new one, which keeps Redact
	// idempotent.
	emailRun = regexp.MustCompile(`[A-Za-z0-9._%+\-]*@[A-Za-z0-9._%+\-@]*`)
	// emailStrict is a conventional address with a dotted domain and an
	// alphabetic top-level label.
	emailStrict = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
	// emailLoose also catches user@host without a dot (git authors,
	// internal hosts), which is PII all the same.
	emailLoose = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@([A-Za-z0-9\-][A-Za-z0-9.\-]*)`)
	// notAHost are '@' suffixes that are not addresses: Go module versions
	// in stack traces (smithy-go@v1.28.8) and content digests (image@sha256).
	notAHost = regexp.MustCompile(`^(?:v[0-9]+\.[0-9]+\.[0-9]+(?:[-+.][0-9A-Za-z.+\-]*)?|sha(?:1|256|512))$`)
)

// redactEmails replaces every run that contains an email address with the
// HashEmail of its first address, keeping trailing dots (sentence ends).
func redactEmails(s string) string {
	return emailRun.ReplaceAllStringFunc(s, func(run string) string {
		addr := emailStrict.FindString(run)
		if addr == "" {
			addr = looseAddress(run)
		}
		if addr == "" {
			return run
		}
		trail := len(run) - len(strings.TrimRight(run, "."))
		return HashEmail(strings.TrimLeft(addr, "._%+-")) + run[len(run)-trail:]
	})
}

// looseAddress returns the first user@host in run whose host is not a Go
// module version or digest name.
func looseAddress(run string) string {
	for _, m := range emailLoose.FindAllStringSubmatch(run, -1) {
		host := strings.TrimRight(m[1], ".")
		if host != "" && !notAHost.MatchString(host) {
			return m[0]
		}
	}
	return ""
}
