// Package safehttp is the HTTP client for URLs a webhook caller chose (a
// diff_url): every connection it makes, redirects included, is checked
// against the addresses and ports it may reach, at dial time, after DNS
// resolution — so neither a DNS answer nor a redirect can point it into the
// VPC, at an instance metadata service, or at an internal port.
package safehttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// Policy says what a client may connect to.
type Policy struct {
	// AllowPrivate allows loopback, private (RFC 1918), shared (RFC 6598)
	// and unique-local IPv6 addresses: the local stack's diff servers.
	// Metadata services and every other special-purpose range stay
	// refused.
	AllowPrivate bool
	// Ports are the ports it may connect to; nil means 80 and 443. A
	// single 0 allows any port (the local stack).
	Ports []int
}

// ErrForbidden marks a connection the policy refused.
var ErrForbidden = errors.New("address not allowed")

// metadata are instance metadata services: never reachable, whatever the
// policy (EC2 IMDS over IPv4 and IPv6, ECS task metadata, and the
// link-local range they live in).
var metadata = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("fe80::/10"),
}

// private are the ranges AllowPrivate opens.
var private = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
}

// special are the IANA special-purpose registries (IPv4 and IPv6) beyond
// the private ranges: never a public diff server. IPv6 forms that embed an
// IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are refused
// outright rather than trusted to embed a public one.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.31.196.0/24"),
	netip.MustParsePrefix("192.52.193.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.175.48.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"), // unspecified, and IPv4-compatible
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("3fff::/20"),
	netip.MustParsePrefix("5f00::/16"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// Check reports why the policy refuses address ("ip:port"), or nil.
func (p Policy) Check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrForbidden, address)
	}
	a := ap.Addr().WithZone("")
	in := func(ps []netip.Prefix) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	switch {
	case in(metadata):
		return fmt.Errorf("%w: a metadata or link-local address", ErrForbidden)
	case in(private):
		if !p.AllowPrivate {
			return fmt.Errorf("%w: a private address", ErrForbidden)
		}
	case in(special) || a.IsMulticast() || a.IsUnspecified():
		return fmt.Errorf("%w: a special-purpose address", ErrForbidden)
	}
	ports := p.Ports
	if ports == nil {
		ports = []int{80, 443}
	}
	if !(len(ports) == 1 && ports[0] == 0) && !slices.Contains(ports, int(ap.Port())) {
		return fmt.Errorf("%w: port %d", ErrForbidden, ap.Port())
	}
	return nil
}

// NewClient returns a client that connects only where the policy allows,
// through no proxy, following at most 5 redirects.
func NewClient(p Policy, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		return p.Check(address)
	}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	tr.Proxy = nil
	return &http.Client{Timeout: timeout, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}
