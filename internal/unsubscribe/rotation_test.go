package unsubscribe

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const (
	oldKey = "old-unsubscribe-key-0123456789abcdef"
	newKey = "new-unsubscribe-key-fedcba9876543210"
)

// Rotation keeps links already sent working: a token minted under the old
// key verifies after rotation when the old key is the previous one, and
// new tokens are minted under the new key.
func TestSigner_RotationAcceptsTokensOfThePreviousKey(t *testing.T) {
	before, err := NewSigner(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	id := RecipientID("ann@example.com")
	sent := before.Token(id, "github:octo/repo")

	after, err := NewSigner(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Rotating() || before.Rotating() {
		t.Fatalf("Rotating: after %t, before %t", after.Rotating(), before.Rotating())
	}
	got, err := after.Verify(sent)
	if err != nil {
		t.Fatalf("a link sent before the rotation no longer verifies: %v", err)
	}
	if got.RecipientID != id || got.Scope != "github:octo/repo" {
		t.Fatalf("claims = %+v", got)
	}
	// New links are signed with the new key only: the old key alone does
	// not verify them, the new key alone does.
	fresh := after.Token(id, ScopeAll)
	if _, err := before.Verify(fresh); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a new token verified under the old key: %v", err)
	}
	newOnly, _ := NewSigner(newKey)
	if _, err := newOnly.Verify(fresh); err != nil {
		t.Fatalf("a new token does not verify under the new key: %v", err)
	}
	// Tampering is still caught whichever key signed the token.
	for _, tok := range []string{sent, fresh} {
		b := []byte(tok)
		b[len(b)-1] ^= 0x01
		if _, err := after.Verify(string(b)); err == nil {
			t.Fatalf("altered token %q verified", b)
		}
	}
}

// Without the previous key, rotation breaks the links already sent: the
// old token is invalid (this is what CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS
// prevents). An empty previous is the setting left unset.
func TestSigner_RotationWithoutThePreviousKeyRejectsOldTokens(t *testing.T) {
	before, _ := NewSigner(oldKey)
	sent := before.Token(RecipientID("ann@example.com"), ScopeAll)
	for _, after := range []func() (*Signer, error){
		func() (*Signer, error) { return NewSigner(newKey) },
		func() (*Signer, error) { return NewSigner(newKey, "") },
	} {
		s, err := after()
		if err != nil {
			t.Fatal(err)
		}
		if s.Rotating() {
			t.Fatal("a signer without a previous key says it is rotating")
		}
		if _, err := s.Verify(sent); !errors.Is(err, ErrInvalid) {
			t.Fatalf("old token under the new key only: %v, want ErrInvalid", err)
		}
	}
	// Another previous key does not help either.
	s, _ := NewSigner(newKey, strings.Repeat("z", MinKeyLen))
	if _, err := s.Verify(sent); !errors.Is(err, ErrInvalid) {
		t.Fatalf("old token under unrelated keys: %v", err)
	}
}

// The previous key meets the current key's minimum, and errors never
// carry a key.
func TestNewSigner_RefusesShortPreviousKeyWithoutEchoingIt(t *testing.T) {
	short := "hunter2-previous"
	_, err := NewSigner(newKey, short)
	if err == nil || !strings.Contains(err.Error(), "previous") || strings.Contains(err.Error(), short) {
		t.Fatalf("err = %v, want one naming the previous key without its value", err)
	}
	if _, err := NewSigner(newKey, oldKey, oldKey); err == nil || strings.Contains(err.Error(), oldKey) {
		t.Fatalf("two previous keys: err = %v", err)
	}
}

// A Signer printed or logged by mistake shows no key.
func TestSigner_NeverPrintsItsKeys(t *testing.T) {
	s, _ := NewSigner(newKey, oldKey)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "signer", s, "value", *s)
	out := buf.String() + fmt.Sprint(s, *s) + fmt.Sprintf("%+v %#v %v %#v", s, s, *s, *s)
	for _, k := range []string{newKey, oldKey} {
		if strings.Contains(out, k) || strings.Contains(out, fmt.Sprint([]byte(k))) {
			t.Fatalf("a key is printed: %s", out)
		}
	}
	if !strings.Contains(out, "rotating: true") {
		t.Fatalf("output %s", out)
	}
}
