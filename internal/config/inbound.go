package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Replies by email (R-REPLY-1..): the inbound domain SES receives replies
// at, and how many replies to one email are acted on in an hour.
const (
	// EnvInboundDomain is the domain of the reply addresses
	// (reply+<key>@<domain>), whose MX points at SES's inbound endpoint.
	// Empty: replies are off; emails carry no Reply-To.
	EnvInboundDomain = "CRITICIZER_INBOUND_DOMAIN"
	// EnvRepliesPerHour bounds the replies to one email acted on in an
	// hour (R-REPLY-6); the rest are dropped and counted.
	EnvRepliesPerHour     = "CRITICIZER_REPLIES_PER_HOUR"
	DefaultRepliesPerHour = 10
	// MaxInboundDomainLen keeps a reply address within RFC 5321's
	// 256-octet path: "<", a 64-octet local part, "@", the domain, ">".
	MaxInboundDomainLen = 256 - 2 - 64 - 1
)

// readInbound reads the inbound domain and the replies' hourly bound.
func (c *Config) readInbound(getenv func(string) string) error {
	d := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(getenv(EnvInboundDomain)), "."))
	if d != "" && (len(d) > MaxInboundDomainLen || !dotAtom(d, 2) || strings.Contains(d, "_")) {
		return fmt.Errorf("%s: want a domain name such as replies.example.org (ASCII letters, digits and '-' in at least two labels, at most %d characters)",
			EnvInboundDomain, MaxInboundDomainLen)
	}
	c.InboundDomain = d
	c.Reply.PerHour = DefaultRepliesPerHour
	if v := strings.TrimSpace(getenv(EnvRepliesPerHour)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%s: want a whole number from 1 to 1000, got %q", EnvRepliesPerHour, v)
		}
		c.Reply.PerHour = n
	}
	return nil
}
