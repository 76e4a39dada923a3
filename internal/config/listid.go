package config

import (
	"fmt"
	"net/mail"
	"strings"
)

// EnvListID names the deploy's mailing list: the id of the List-Id header
// every email carries (RFC 2919), what a reader's filter matches to sort
// or mute Criticizer's mail of this deploy.
const EnvListID = "CRITICIZER_LIST_ID"

// MaxListIDLen is RFC 2919's limit on a list id.
const MaxListIDLen = 255

// MaxMailDomainLen bounds the sender's domain: the conversation root
// (mail.Threads.Root, "<criticizer.t." + 32 hex digits + "@" + domain +
// ">") must fit SES's header value (R-LIMIT-2); a DNS name is at most 253
// characters anyway.
const MaxMailDomainLen = 253

// readListID reads the list id, "criticizer." and the sender's domain
// unless set, and the sender's domain the conversation roots are named
// under. The sender is an SES identity, so its domain is ASCII (SES takes
// an internationalized domain in Punycode only).
func (c *Config) readListID(getenv func(string) string) error {
	domain, err := mailDomain(c.MailFrom)
	if err != nil {
		return err
	}
	c.MailDomain = domain
	c.ListID = strings.TrimSpace(getenv(EnvListID))
	if c.ListID == "" {
		c.ListID = "criticizer." + domain
	}
	return checkListID(c.ListID)
}

// mailDomain is the domain of the sender's address.
func mailDomain(from string) (string, error) {
	addr := from
	if a, err := mail.ParseAddress(from); err == nil {
		addr = a.Address
	}
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return "", fmt.Errorf("%s: want an address such as Criticizer <critic@reviews.example.org>", EnvMailFrom)
	}
	domain := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(addr[at+1:]), ">"))
	if len(domain) > MaxMailDomainLen || !dotAtom(domain, 1) {
		return "", fmt.Errorf("%s: the address's domain must be an ASCII domain name of at most %d characters (Punycode for an internationalized one)", EnvMailFrom, MaxMailDomainLen)
	}
	return domain, nil
}

// checkListID accepts RFC 2919's list-label "." list-id-namespace, in the
// plainest form every filter handles: ASCII letters, digits, '-' and '_'
// in dot-separated labels, at least two, at most MaxListIDLen characters.
func checkListID(id string) error {
	if len(id) > MaxListIDLen || !dotAtom(id, 2) {
		return fmt.Errorf("%s: want a list id such as reviews.criticizer.example.org (letters, digits, '-' and '_' in at least two dot-separated labels, at most %d characters)",
			EnvListID, MaxListIDLen)
	}
	return nil
}

// dotAtom reports whether s is at least min non-empty labels of ASCII
// letters, digits, '-' and '_', separated by dots.
func dotAtom(s string, min int) bool {
	labels := strings.Split(s, ".")
	if len(labels) < min {
		return false
	}
	for _, l := range labels {
		if l == "" {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
