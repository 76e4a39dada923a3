package delivery

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Domains is the set of recipient domains Criticizer may mail
// (CRITICIZER_ALLOWED_RECIPIENT_DOMAINS, R-RECIPIENT-1). An address whose
// domain is not in it is settled skipped_domain and never sent. The zero
// value allows every domain.
//
// A domain matches exactly, never its subdomains: "example.com" allows
// ann@example.com, not ann@mail.example.com (list that one too). Every
// domain is compared in its ASCII form: lower-cased, one trailing dot
// dropped, and each label that is not ASCII encoded with punycode
// ("bücher.example" is "xn--bcher-kva.example", and either spelling may
// be listed). Nothing else is mapped: a look-alike letter from another
// script, full-width dots or an address literal ("[192.0.2.1]") give a
// domain that is not on the list, so such an address is skipped, never
// mailed.
type Domains struct {
	set map[string]bool
}

// ParseDomains reads a comma-separated list of domains; blanks between
// commas are ignored, an empty list allows every domain. A domain must be
// a host name: labels of letters, digits and hyphens (or non-ASCII
// letters) joined by dots, with no "@", wildcard, port or space; the
// error quotes the entry at fault (a domain is not a secret).
func ParseDomains(list string) (Domains, error) {
	var d Domains
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		ascii, ok := asciiDomain(raw)
		if !ok {
			return Domains{}, fmt.Errorf("%q is not a domain such as example.com (no @, *, port or space; subdomains are listed one by one)", raw)
		}
		if d.set == nil {
			d.set = map[string]bool{}
		}
		d.set[ascii] = true
	}
	return d, nil
}

// On reports whether the list restricts anything.
func (d Domains) On() bool { return len(d.set) > 0 }

// List is the allowed domains in their ASCII form, sorted.
func (d Domains) List() []string {
	out := make([]string, 0, len(d.set))
	for k := range d.set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Allows reports whether addr may be mailed: the list is off, or the
// domain after the address's last "@" is on it. Anything that is not an
// address with a host name (no "@", an address literal) is not allowed
// while the list is on.
func (d Domains) Allows(addr string) bool {
	if !d.On() {
		return true
	}
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return false
	}
	ascii, ok := asciiDomain(addr[i+1:])
	return ok && d.set[ascii]
}

// asciiDomain is a host name's ASCII form (lower case, punycode labels,
// no trailing dot), or false when it is not a host name.
func asciiDomain(s string) (string, bool) {
	s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	if s == "" || len(s) > 253 || !utf8.ValidString(s) {
		return "", false
	}
	labels := strings.Split(s, ".")
	for i, l := range labels {
		if l == "" || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", false
		}
		ascii := true
		for _, r := range l {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			case r >= utf8.RuneSelf && isLetterOrMark(r):
				ascii = false
			default:
				return "", false
			}
		}
		if !ascii {
			l = "xn--" + punycode(l)
		}
		if len(l) > 63 {
			return "", false
		}
		labels[i] = l
	}
	return strings.Join(labels, "."), true
}
