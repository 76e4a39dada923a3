package inbound

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

const testKey = "test-unsubscribe-key-0123456789abcdef"

var at = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)

func keys(t testing.TB, previous ...string) *Keys {
	t.Helper()
	k, err := NewKeys(testKey, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A reply address fits RFC 5321's 64-octet local part, survives any
// change of case, names the delivery and nothing else, and stops working
// when its email's links do.
// Rules: R-REPLY-1.
func TestKey_SealOpen_CaseExpiryAndLength(t *testing.T) {
	k := keys(t)
	id := delivery.ID("generic:billing-1042", "Ann@Example.com", 3)
	addr, err := k.Address("Replies.Example.org", id, at.Add(KeyLifetime))
	if err != nil {
		t.Fatal(err)
	}
	local, domain, _ := strings.Cut(addr, "@")
	if len(local) > 64 || domain != "replies.example.org" || !strings.HasPrefix(local, LocalPrefix) || local != strings.ToLower(local) {
		t.Fatalf("address %q: want reply+<lower-case key> of at most 64 octets at the domain", addr)
	}
	if strings.Contains(strings.ToLower(addr), "ann") || strings.Contains(addr, "example.com") {
		t.Fatalf("address %q names the recipient", addr)
	}
	for _, form := range []string{addr, strings.ToUpper(addr), "Reply+" + strings.ToUpper(local[6:]) + "@REPLIES.example.ORG"} {
		key, ok := KeyOf(form, "replies.example.org")
		if !ok {
			t.Fatalf("KeyOf(%q): not a reply address", form)
		}
		got, err := k.Open(key, at)
		if err != nil || got != id {
			t.Fatalf("Open(%q) = %q, %v; want %q", key, got, err, id)
		}
	}
	key, _ := KeyOf(addr, "replies.example.org")
	if got, err := k.Open(key, at.Add(KeyLifetime+time.Hour)); !errors.Is(err, ErrExpired) || got != id {
		t.Errorf("after its lifetime: %q, %v; want %q and ErrExpired", got, err, id)
	}
	for name, other := range map[string]string{
		"another domain":  "reply+" + key + "@example.org",
		"another prefix":  "replies+" + key + "@replies.example.org",
		"no key":          "reply+@replies.example.org",
		"a plain address": "critic@replies.example.org",
	} {
		if got, ok := KeyOf(other, "replies.example.org"); ok {
			if _, err := k.Open(got, at); err == nil {
				t.Errorf("%s: %q opened", name, other)
			}
		}
	}
}

// A key opens under its own keys only, or the previous one during a
// rotation; an altered key, one of another delivery or a vote token
// never does.
// Rules: R-REPLY-1.
func TestKey_ForgedAlteredOrOtherKey_Invalid(t *testing.T) {
	k := keys(t)
	key, err := k.Key(delivery.ID("generic:cl", "a@example.com", 1), at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := NewKeys("another-unsubscribe-key-0123456789abcdef", testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.Open(key, at); err != nil {
		t.Errorf("during a rotation the previous key's address is refused: %v", err)
	}
	other, _ := NewKeys("another-unsubscribe-key-0123456789abcdef")
	if _, err := other.Open(key, at); !errors.Is(err, ErrInvalid) {
		t.Errorf("another key opens it: %v", err)
	}
	for i := range key {
		b := []byte(key)
		b[i] = "ab"[map[bool]int{true: 1}[b[i] == 'a']]
		if _, err := k.Open(string(b), at); err == nil && string(b) != key {
			// The last character carries 2 bits beyond the key: spellings
			// that decode to the same bytes are the same key.
			if i != len(key)-1 {
				t.Errorf("key altered at %d opens", i)
			}
		}
	}
	if _, err := k.Key("j_notadelivery", at); err == nil {
		t.Error("a key for something that is not a delivery id")
	}
	if _, err := NewKeys("short"); err == nil {
		t.Error("a short unsubscribe key is accepted")
	}
}

// FuzzOpenKey: whatever arrives as a reply address's local part, Open
// never panics, and a key it accepts names a delivery id and is one Key
// mints again for that id (so a key cannot be stretched to name another).
func FuzzOpenKey(f *testing.F) {
	k := keys(f)
	good, _ := k.Key(delivery.ID("generic:cl", "a@example.com", 1), at.Add(KeyLifetime))
	f.Add(good)
	f.Add(strings.ToUpper(good))
	f.Add(good[:KeyLen-1])
	f.Add(good + "a")
	f.Add("")
	f.Add(strings.Repeat("a", KeyLen))
	f.Fuzz(func(t *testing.T, key string) {
		id, err := k.Open(key, at)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
				t.Fatalf("error %v is neither ErrInvalid nor ErrExpired", err)
			}
			if errors.Is(err, ErrInvalid) && id != "" {
				t.Fatalf("an invalid key names %q", id)
			}
			return
		}
		if !strings.HasPrefix(id, "d_") || len(id) != 34 {
			t.Fatalf("accepted key names %q, not a delivery id", id)
		}
		if len(key) != KeyLen {
			t.Fatalf("accepted a key of %d characters", len(key))
		}
		if _, err := k.Key(id, at.Add(KeyLifetime)); err != nil {
			t.Fatalf("the id an accepted key names cannot be keyed again: %v", err)
		}
	})
}
