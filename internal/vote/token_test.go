package vote

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

const testKey = "0123456789abcdef0123456789abcdef-test"

var finding = critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in."}

// R-VOTE-1: a vote link is signed, carries no address, and expires. An
// altered token, one under another key, one past its expiry and an
// unsubscribe token are all refused.
func TestToken_SignedExpiringAndTamperEvident(t *testing.T) {
	s, err := NewSigner(testKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	exp := now.Add(LinkLifetime)
	tok := s.Token("d_abc", finding, Wrong, exp)
	if strings.Contains(tok, "@") || strings.ContainsAny(tok, "/?#+ ") {
		t.Fatalf("token %q is not path-safe", tok)
	}
	c, err := s.Verify(tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.DeliveryID != "d_abc" || c.FindingID != FindingID(finding) || c.Choice != Wrong || c.Rule != "debug-print" || !c.Expires.Equal(exp) {
		t.Fatalf("claims %+v", c)
	}
	if _, err := s.Verify(tok, exp); !errors.Is(err, ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
	for i := range len(tok) {
		b := []byte(tok)
		b[i] ^= 0x01
		if _, err := s.Verify(string(b), now); err == nil {
			t.Fatalf("token altered at byte %d verified", i)
		}
	}
	other, _ := NewSigner(strings.Repeat("k", MinKeyLen))
	if _, err := other.Verify(tok, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another key: %v", err)
	}
	// The same secret signs unsubscribe tokens; neither passes for the other.
	us, _ := unsubscribe.NewSigner(testKey)
	if _, err := s.Verify(us.Token("r_x", unsubscribe.ScopeAll), now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an unsubscribe token verified as a vote: %v", err)
	}
	if _, err := us.Verify(tok); err == nil {
		t.Fatal("a vote token verified as an unsubscribe token")
	}
	// Rotation: the previous key still verifies links already sent.
	rotated, _ := NewSigner(strings.Repeat("n", MinKeyLen), testKey)
	if _, err := rotated.Verify(tok, now); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
}

// No links without a public URL or a signer; two distinct links with one.
func TestLinks_NoneWithoutBaseURL(t *testing.T) {
	s, _ := NewSigner(testKey)
	exp := time.Unix(2e9, 0)
	if u, w := s.Links("", "d_x", finding, exp); u != "" || w != "" {
		t.Fatal("links without a base URL")
	}
	var none *Signer
	if u, w := none.Links("https://x", "d_x", finding, exp); u != "" || w != "" {
		t.Fatal("links without a signer")
	}
	u, w := s.Links("https://api.example.com/", "d_x", finding, exp)
	if !strings.HasPrefix(u, "https://api.example.com/vote/") || !strings.HasPrefix(w, "https://api.example.com/vote/") || u == w {
		t.Fatalf("links %q %q", u, w)
	}
	long := finding
	long.Rule = strings.Repeat("é", 100) + "\nx"
	c, err := s.Verify(s.Token("d_x", long, Useful, exp), time.Unix(1e9, 0))
	if err != nil || len(c.Rule) > maxRule || strings.Contains(c.Rule, "\n") {
		t.Fatalf("long rule: %+v %v", c, err)
	}
}
