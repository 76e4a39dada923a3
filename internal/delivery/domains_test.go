package delivery_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/delivery"
)

// R-RECIPIENT-1: a domain matches exactly (case aside, one trailing dot
// aside), never a subdomain or a look-alike, and an internationalized
// domain matches in either spelling.
func TestDomains_ExactCaseInsensitivePunycode(t *testing.T) {
	d, err := delivery.ParseDomains(" Example.COM, bücher.example ,, xn--mnchen-3ya.example ")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.List(), ","); got != "example.com,xn--bcher-kva.example,xn--mnchen-3ya.example" {
		t.Fatalf("List() = %s", got)
	}
	for addr, want := range map[string]bool{
		"ann@example.com":                 true,
		"Ann@EXAMPLE.com":                 true,
		"ann@example.com.":                true,
		`"a@b"@example.com`:               true,
		"ann@xn--bcher-kva.example":       true,
		"ann@BÜCHER.example":              true,
		"ann@münchen.example":             true,
		"ann@mail.example.com":            false, // subdomains are listed one by one
		"ann@example.com.evil.org":        false,
		"ann@evilexample.com":             false,
		"ann@exаmple.com":                 false, // Cyrillic а
		"ann@example\uff0ecom":            false, // full-width dot
		"ann@example.com\u202e":           false,
		"ann@[192.0.2.1]":                 false,
		"example.com":                     false,
		"ann@":                            false,
		"ann@example.com@attacker.org":    false,
		"ann@attacker.org (@example.com)": false,
	} {
		if got := d.Allows(addr); got != want {
			t.Errorf("Allows(%q) = %v, want %v", addr, got, want)
		}
	}
	var off delivery.Domains
	if !off.Allows("anyone@anywhere.org") || off.On() {
		t.Error("the zero list must allow every domain")
	}
}

// The RFC 3492 sample strings (section 7.1), as labels.
func TestDomains_PunycodeSamples(t *testing.T) {
	for in, want := range map[string]string{
		"bücher":    "xn--bcher-kva",
		"他们为什么不说中文": "xn--ihqwcrb4cv8a8dqg056pqjye",
		"почемужеонинеговорятпорусски": "xn--b1abfaaepdrnnbgefbadotcwatmq2g4l",
		"ü":  "xn--tda",
		"例え": "xn--r8jz45g",
	} {
		d, err := delivery.ParseDomains(in + ".example")
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := d.List()[0]; got != want+".example" {
			t.Errorf("%s: %s, want %s.example", in, got, want)
		}
	}
}

func TestDomains_RefusesWhatIsNotADomain(t *testing.T) {
	for _, bad := range []string{"*.example.com", "@example.com", "ann@example.com", "example.com:25", "exa mple.com",
		"-example.com", "example..com", "[192.0.2.1]", "example\u202e.com", "example.com/x", strings.Repeat("a", 64) + ".com"} {
		if _, err := delivery.ParseDomains("ok.example," + bad); err == nil {
			t.Errorf("ParseDomains(%q) accepted", bad)
		}
	}
}
