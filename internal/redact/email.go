package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Email returns the stable pseudonym Text substitutes for an email
// address: "email:" and the first 12 hex digits of the SHA-256 of the
// trimmed, lower-cased address. Operators can compute it for a known
// recipient to find that recipient's log lines and dead letters without
// either ever storing the address.
func Email(addr string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(addr))))
	return "email:" + hex.EncodeToString(sum[:])[:12]
}

// notAHost are '@' suffixes that are not addresses: Go module versions in
// stack traces (smithy-go@v1.28.8) and content digests (image@sha256).
var notAHost = regexp.MustCompile(`^(?:v[0-9]+\.[0-9]+\.[0-9]+(?:[-+.][0-9A-Za-z.+\-]*)?|sha(?:1|256|512))$`)

// A local part's scan stops after maxLocal bytes (an address's local part
// is at most 64 octets; a little more for encodings): "%40" is both an at
// sign and local-part text, so scans back from at signs could overlap, and
// the bound keeps a line of a million of them linear. A domain's scan
// needs no bound: no at sign is domain text, so the forward scans of two
// at signs never overlap.
const (
	maxLocal   = 256
	maxQuoted  = 64 // bytes between the quotes of a quoted local part
	maxLiteral = 64 // bytes between the brackets of an address literal
)

// atSigns are the ways an at sign is written in text that reaches us: the
// character itself, the full-width one (U+FF20) and URL encoding.
var atSigns = []string{"@", "＠", "%40"}

// redactEmails replaces every email address in s with its pseudonym. It
// accepts what intake's address parser (net/mail: RFC 5322 with RFC 6532's
// UTF-8) accepts, so no address a webhook can carry survives: dot-atoms of
// any script, quoted local parts (with spaces), domains of any script, IP
// literals, and the at sign written full-width or as %40. Why not a
// regexp: the local part's character set is most of ASCII plus every
// letter, and a quoted part may hold spaces; a scan from each at sign
// outwards says exactly that, in linear time.
//
// At signs chained to an address on either side (x@1@b.com, a@b.cc@d.ee,
// "a"@"b"@c.org) are redacted with it as one (R-PRIVACY-3): a pseudonym
// begins with a domain ("email") and ends with a local part (hex), so
// replacing only the address would leave "x@email:…" or "…@d.ee", a new
// address for the next pass, one more per link of the chain.
func redactEmails(s string) string {
	if !strings.Contains(s, "@") && !strings.Contains(s, "＠") && !strings.Contains(s, "%40") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		n := atAt(s, i)
		if n == 0 {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		start := localStart(s, i, last)
		end := domainEnd(s, i+n)
		if start == i || end == i+n || !isHost(s[i+n:end]) {
			i += n
			continue
		}
		for {
			m := atBefore(s, start)
			if m == 0 || start-m < last {
				break
			}
			ls := localStart(s, start-m, last)
			if ls == start-m {
				break
			}
			start = ls
		}
		for {
			m := atAt(s, end)
			if m == 0 {
				break
			}
			de := domainEnd(s, end+m)
			if de == end+m {
				break
			}
			end = de
		}
		b.WriteString(s[last:start])
		b.WriteString(Email(s[start:i] + "@" + s[i+n:end]))
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// atBefore returns the length of an at sign that ends at s[j], or 0.
func atBefore(s string, j int) int {
	for _, a := range atSigns {
		if j >= len(a) && strings.EqualFold(s[j-len(a):j], a) {
			return len(a)
		}
	}
	return 0
}

// atAt returns the length of the at sign starting at s[i], or 0.
func atAt(s string, i int) int {
	for _, a := range atSigns {
		if strings.HasPrefix(s[i:], a) || (a == "%40" && len(s)-i >= 3 && strings.EqualFold(s[i:i+3], a)) {
			return len(a)
		}
	}
	return 0
}

// localStart scans back from the at sign at s[i], not before s[floor]
// (the end of the text already replaced), over a local part: a quoted
// string, or atext and dots (ASCII atext, and any letter, digit or mark for
// UTF-8 addresses). It returns i when there is none.
func localStart(s string, i, floor int) int {
	if i > floor && s[i-1] == '"' {
		// A quoted local part: back to the opening quote (escaped too: the
		// text may be JSON- or %q-encoded), at most maxQuoted bytes
		// between the quotes.
		for j := i - 2; j >= floor && i-2-j <= maxQuoted; j-- {
			if s[j] == '"' {
				for j > floor && s[j-1] == '\\' {
					j--
				}
				return j
			}
		}
		return i
	}
	j := i
	for j > floor && i-j < maxLocal {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		if !isAtext(r) && r != '.' {
			break
		}
		j -= size
	}
	// A leading dot is punctuation, not part of the address, unless the
	// local part is nothing else: ".@x.org" is an address (R-PRIVACY-3).
	k := j
	for k < i && s[k] == '.' {
		k++
	}
	if k < i {
		return k
	}
	return j
}

// domainEnd scans forward from s[k] over a domain: labels of letters,
// digits, marks and hyphens joined by dots, or an IP literal in brackets.
// Trailing dots (the end of a sentence) are not part of it.
func domainEnd(s string, k int) int {
	if k < len(s) && s[k] == '[' {
		// An address literal: RFC 5321 allows 64 characters of it (a
		// full IPv6 form is 50).
		if e := strings.IndexByte(s[k:], ']'); e > 0 && e-1 <= maxLiteral {
			return k + e + 1
		}
		return k
	}
	j := k
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '-' || r == '.') {
			break
		}
		j += size
	}
	for j > k && s[j-1] == '.' {
		j--
	}
	return j
}

// isHost reports whether a domain part names a host: it has a letter or is
// an IP literal, and is not a module version or a digest name.
func isHost(d string) bool {
	if strings.HasPrefix(d, "[") {
		return true
	}
	if !strings.ContainsFunc(d, unicode.IsLetter) {
		return false
	}
	// A last label of letters is a top-level domain: an address, even if
	// it starts like a version (x@v1.2.3-a.com).
	if i := strings.LastIndexByte(d, '.'); i >= 0 && len(d)-i > 2 && !strings.ContainsFunc(d[i+1:], func(r rune) bool { return !unicode.IsLetter(r) }) {
		return true
	}
	return !notAHost.MatchString(d)
}

// isAtext reports whether r may appear unquoted in a local part.
func isAtext(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}
