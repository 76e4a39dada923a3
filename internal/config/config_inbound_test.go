package config

import (
	"strings"
	"testing"
)

// The inbound domain is a plain domain name short enough for a reply
// address to fit RFC 5321's path, lower-cased; empty turns replies off.
// The hourly bound is 1 to 1000, 10 by default.
// Rules: R-REPLY-1, R-REPLY-6.
func TestInbound_DomainAndRepliesPerHour(t *testing.T) {
	read := func(env map[string]string) (Config, error) { return FromEnv(func(k string) string { return env[k] }) }
	c, err := read(map[string]string{EnvInboundDomain: " Replies.Example.org. "})
	if err != nil || c.InboundDomain != "replies.example.org" || c.Reply.PerHour != DefaultRepliesPerHour {
		t.Fatalf("%q %d %v", c.InboundDomain, c.Reply.PerHour, err)
	}
	if c, err := read(nil); err != nil || c.InboundDomain != "" {
		t.Fatalf("unset: %q %v", c.InboundDomain, err)
	}
	for _, bad := range []string{"localhost", "a..b", "x_y.example.org", "ü.example.org", "a b.org", strings.Repeat("a", MaxInboundDomainLen) + ".org"} {
		if _, err := read(map[string]string{EnvInboundDomain: bad}); err == nil || !strings.Contains(err.Error(), EnvInboundDomain) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	if c, err := read(map[string]string{EnvRepliesPerHour: "3"}); err != nil || c.Reply.PerHour != 3 {
		t.Errorf("3: %d %v", c.Reply.PerHour, err)
	}
	for _, bad := range []string{"0", "-1", "1001", "ten"} {
		if _, err := read(map[string]string{EnvRepliesPerHour: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
