package prefs_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

const testKey = "0123456789abcdef0123456789abcdef-test"

// A preference link is signed, names the recipient by their opaque id and
// the email's repository, never an address, and expires. An altered
// token, one under another key, one past its expiry, and the vote and
// unsubscribe tokens of the same secret are all refused; the previous key
// verifies during a rotation.
// Rules: R-PREF-2.
func TestToken_SignedExpiringTamperEvidentNoAddress(t *testing.T) {
	s, err := prefs.NewSigner(testKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	exp := now.Add(prefs.LinkLifetime)
	rid := unsubscribe.RecipientID("ann@example.com")
	repo := unsubscribe.Repository("github", "acme/billing#7")
	tok := s.Token(rid, repo, exp)
	if strings.ContainsAny(tok, "/?#+ %@") {
		t.Fatalf("token %q is not path-safe", tok)
	}
	payload, _, _ := strings.Cut(tok, ".")
	if raw, err := base64.RawURLEncoding.DecodeString(payload); err != nil || strings.Contains(string(raw), "ann") || strings.Contains(string(raw), "@") {
		t.Fatalf("payload %q (%v) names the address", raw, err)
	}
	c, err := s.Verify(tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.RecipientID != rid || c.Repository != repo || !c.Expires.Equal(exp) {
		t.Fatalf("claims %+v", c)
	}
	if c, err := s.Verify(tok, exp); !errors.Is(err, prefs.ErrExpired) || c.RecipientID != rid {
		t.Fatalf("at expiry: %+v, %v; want ErrExpired with the claims", c, err)
	}
	for i := range len(tok) {
		b := []byte(tok)
		b[i] ^= 0x01
		if _, err := s.Verify(string(b), now); !errors.Is(err, prefs.ErrInvalid) {
			t.Fatalf("token altered at byte %d: %v, want ErrInvalid", i, err)
		}
	}
	other, _ := prefs.NewSigner(strings.Repeat("k", prefs.MinKeyLen))
	if _, err := other.Verify(tok, now); !errors.Is(err, prefs.ErrInvalid) {
		t.Fatalf("another key: %v", err)
	}
	us, _ := unsubscribe.NewSigner(testKey)
	if _, err := s.Verify(us.Token(rid, repo), now); !errors.Is(err, prefs.ErrInvalid) {
		t.Fatalf("an unsubscribe token verified as a preference token: %v", err)
	}
	if _, err := us.Verify(tok); err == nil {
		t.Fatal("a preference token verified as an unsubscribe token")
	}
	vs, _ := vote.NewSigner(testKey)
	f := critic.Finding{File: "a.go", Line: 1, Rule: "r", Message: "m"}
	if _, err := s.Verify(vs.Token("d_x", f, vote.Wrong, exp), now); !errors.Is(err, prefs.ErrInvalid) {
		t.Fatalf("a vote token verified as a preference token: %v", err)
	}
	if _, err := vs.Verify(tok, now); err == nil {
		t.Fatal("a preference token verified as a vote token")
	}
	rotated, _ := prefs.NewSigner(strings.Repeat("n", prefs.MinKeyLen), testKey)
	if _, err := rotated.Verify(tok, now); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	// No repository (or one too long to keep): the page offers no mute.
	if c, err := s.Verify(s.Token(rid, strings.Repeat("x", prefs.MaxRepository+1), exp), now); err != nil || c.Repository != "" {
		t.Fatalf("an overlong repository: %+v, %v", c, err)
	}
}

// No link without a public URL or a signer; one under the base URL with.
// Short keys are refused without naming them.
// Rules: R-PREF-2.
func TestURL_NoneWithoutBaseURL(t *testing.T) {
	s, _ := prefs.NewSigner(testKey)
	exp := time.Unix(2e9, 0)
	if s.URL("", "r_x", "", exp) != "" {
		t.Fatal("a link without a base URL")
	}
	var none *prefs.Signer
	if none.URL("https://x", "r_x", "", exp) != "" {
		t.Fatal("a link without a signer")
	}
	if u := s.URL("https://api.example.com/", "r_x", "", exp); !strings.HasPrefix(u, "https://api.example.com/preferences/") {
		t.Fatalf("link %q", u)
	}
	if _, err := prefs.NewSigner("short-key"); err == nil || strings.Contains(err.Error(), "short-key") {
		t.Fatalf("a short key: %v", err)
	}
	if strings.Contains(s.String(), testKey) {
		t.Fatal("the signer prints its key")
	}
}
