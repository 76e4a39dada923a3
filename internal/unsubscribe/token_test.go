package unsubscribe

import (
	"errors"
	"strings"
	"testing"
)

const testKey = "0123456789abcdef0123456789abcdef-test"

// R-UNSUB-1: "tokens are signed and unguessable". A token verifies under
// its key only, and any change to it fails.
func TestToken_SignedAndTamperEvident(t *testing.T) {
	s, err := NewSigner(testKey)
	if err != nil {
		t.Fatal(err)
	}
	id := RecipientID("Ann@Example.com ")
	tok := s.Token(id, "github:octo/repo")
	got, err := s.Verify(tok)
	if err != nil {
		t.Fatalf("Verify(own token) = %v", err)
	}
	if got.RecipientID != id || got.Scope != "github:octo/repo" {
		t.Fatalf("claims = %+v", got)
	}
	if strings.Contains(tok, "ann") || strings.Contains(tok, "example") {
		t.Fatalf("token %q carries the address", tok)
	}
	other, _ := NewSigner(strings.Repeat("k", 40))
	if _, err := other.Verify(tok); !errors.Is(err, ErrInvalid) {
		t.Fatalf("token verified under another key: %v", err)
	}
	// Flip each character of the token in turn: none may verify.
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 0x01
		if c, err := s.Verify(string(b)); err == nil && c != got {
			t.Fatalf("altered token (byte %d) verified as %+v", i, c)
		}
	}
	// Forge: another recipient's payload with this recipient's MAC.
	p, m, _ := strings.Cut(tok, ".")
	forged := strings.Replace(p, p[:4], "dj", 1) + "." + m
	if _, err := s.Verify(forged); err == nil {
		t.Fatal("forged payload verified")
	}
	for _, bad := range []string{"", ".", "abc", "a.b", strings.Repeat("x", 2000) + ".y"} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Verify(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestNewSigner_RefusesShortKeys(t *testing.T) {
	if _, err := NewSigner("short"); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}

// One address, however it is spelled in a webhook, has one id: an
// unsubscribe from Ann@x.com stops mail to ann@x.com.
func TestRecipientID_FoldsSpellings(t *testing.T) {
	if RecipientID("Ann@Example.com") != RecipientID(" ann@example.com") {
		t.Fatal("spellings of one address got different ids")
	}
	if RecipientID("ann@example.com") == RecipientID("bob@example.com") {
		t.Fatal("two addresses share an id")
	}
}

func TestRepository_ScopesByRepository(t *testing.T) {
	for _, c := range []struct{ source, cl, want string }{
		{"github", "octo/repo#7", "github:octo/repo"},
		{"gitlab", "group/sub/proj!3", "gitlab:group/sub/proj"},
		{"gerrit", "platform/core~42", "gerrit:platform/core"},
		{"generic", "CL-123", "generic:"},
	} {
		if got := Repository(c.source, c.cl); got != c.want {
			t.Errorf("Repository(%q, %q) = %q, want %q", c.source, c.cl, got, c.want)
		}
	}
}

func TestURL_UnderBaseURL(t *testing.T) {
	s, _ := NewSigner(testKey)
	u := s.URL("https://api.example.com/", "r_x", ScopeAll)
	if !strings.HasPrefix(u, "https://api.example.com/unsubscribe/") {
		t.Fatalf("URL = %q", u)
	}
	var none *Signer
	if none.URL("https://x", "r_x", ScopeAll) != "" || s.URL("", "r_x", ScopeAll) != "" {
		t.Fatal("a link without a signer or a base URL")
	}
}
