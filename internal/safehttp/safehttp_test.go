package safehttp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/safehttp"
)

// Regression (the diff_url SSRF list was incomplete): 0.0.0.0/8,
// 100.64/10, 198.18/15, NAT64, 6to4 and IPv4-compatible IPv6 were not
// refused; with private addresses allowed the IPv6 metadata address was
// reachable; and any port was. Every IANA special-purpose range and every
// metadata address is refused, private ranges only open on request, and
// only ports 80 and 443 unless configured.
func TestPolicy_RefusesSpecialPurposeAndMetadata(t *testing.T) {
	strict, lax := safehttp.Policy{}, safehttp.Policy{AllowPrivate: true}
	tests := []struct {
		addr            string
		strictOK, laxOK bool
	}{
		{"93.184.215.14:443", true, true},
		{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", true, true},
		{"93.184.215.14:80", true, true},
		{"93.184.215.14:8080", false, false},
		{"93.184.215.14:22", false, false},
		{"169.254.169.254:80", false, false},
		{"169.254.170.2:80", false, false},
		{"[fd00:ec2::254]:80", false, false},
		{"[fe80::1]:80", false, false},
		{"[::ffff:169.254.169.254]:80", false, false},
		{"127.0.0.1:443", false, true},
		{"10.0.0.5:443", false, true},
		{"172.20.0.1:443", false, true},
		{"192.168.1.1:443", false, true},
		{"100.64.0.1:443", false, true},
		{"[::1]:443", false, true},
		{"[fd12:3456::1]:443", false, true},
		{"0.0.0.0:443", false, false},
		{"0.1.2.3:443", false, false},
		{"198.18.0.1:443", false, false},
		{"198.19.255.255:443", false, false},
		{"192.0.2.1:443", false, false},
		{"203.0.113.9:443", false, false},
		{"240.0.0.1:443", false, false},
		{"255.255.255.255:443", false, false},
		{"224.0.0.1:443", false, false},
		{"[::]:443", false, false},
		{"[::127.0.0.1]:443", false, false},
		{"[::ffff:10.0.0.1]:443", false, false},
		{"[64:ff9b::a9fe:a9fe]:443", false, false},
		{"[2002:a9fe:a9fe::1]:443", false, false},
		{"[2001::1]:443", false, false},
		{"[2001:db8::1]:443", false, false},
		{"[ff02::1]:443", false, false},
		{"[fec0::1]:443", false, false},
	}
	for _, tt := range tests {
		if err := strict.Check(tt.addr); (err == nil) != tt.strictOK {
			t.Errorf("strict %s: %v, want allowed=%v", tt.addr, err, tt.strictOK)
		}
		if err := lax.Check(tt.addr); (err == nil) != tt.laxOK {
			t.Errorf("private allowed %s: %v, want allowed=%v", tt.addr, err, tt.laxOK)
		}
	}
	if err := (safehttp.Policy{Ports: []int{8443}}).Check("93.184.215.14:8443"); err != nil {
		t.Errorf("a configured port: %v", err)
	}
	if err := (safehttp.Policy{Ports: []int{0}}).Check("93.184.215.14:65000"); err != nil {
		t.Errorf("any port: %v", err)
	}
}

// The check runs at dial time, on the resolved address, for every
// connection — also after a redirect to a forbidden place.
func TestClient_RedirectToAForbiddenAddressIsRefused(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("diff")) }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254:"+port+"/latest/meta-data/", http.StatusFound)
	}))
	defer redirect.Close()
	c := safehttp.NewClient(safehttp.Policy{AllowPrivate: true, Ports: []int{0}}, 2*time.Second)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, redirect.URL, nil)
	_, err := c.Do(req)
	if !errors.Is(err, safehttp.ErrForbidden) {
		t.Fatalf("redirect to the metadata address: %v, want ErrForbidden", err)
	}
	resp, err := c.Get(target.URL)
	if err != nil {
		t.Fatalf("a loopback server with private allowed: %v", err)
	}
	resp.Body.Close()
	if _, err := safehttp.NewClient(safehttp.Policy{}, time.Second).Get(target.URL); !errors.Is(err, safehttp.ErrForbidden) {
		t.Fatalf("loopback with private refused: %v, want ErrForbidden", err)
	}
}
