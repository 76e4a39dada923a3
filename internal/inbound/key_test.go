package inbound

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/digest"
	"github.com/criticizer/criticizer/internal/prefs"
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
	dg, _ := k.Key(delivery.DigestID("a@example.com", at.Truncate(time.Hour)), at)
	f.Add(dg)
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
		if _, _, digest := delivery.SplitDigestID(id); !digest && (!strings.HasPrefix(id, "d_") || len(id) != 34) {
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

// A daily digest has a reply address too: its key names the digest row,
// fits the same 64 octets, opens to the digest's id (never to a version's
// row), and expires KeyLifetime after the digest is due. Every due time
// a reader's choice can give (each zone the preference page offers, each
// hour, the days of a year around its clock changes) can be keyed.
// Rules: R-DIGEST-6, R-REPLY-1.
func TestKey_DigestNamesTheDigest_EveryDueTimeKeyed(t *testing.T) {
	k := keys(t)
	due := time.Date(2026, 11, 28, 7, 30, 0, 0, time.UTC)
	id := delivery.DigestID("Ann@Example.com", due)
	addr, err := k.Address("replies.example.org", id, due.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if local, _, _ := strings.Cut(addr, "@"); len(local) != len(LocalPrefix)+KeyLen || strings.Contains(addr, "ann") {
		t.Fatalf("digest address %q", addr)
	}
	key, _ := KeyOf(addr, "replies.example.org")
	if got, err := k.Open(key, due.Add(KeyLifetime-time.Minute)); err != nil || got != id {
		t.Fatalf("Open = %q, %v; want %q", got, err, id)
	}
	if got, err := k.Open(key, due.Add(KeyLifetime)); !errors.Is(err, ErrExpired) || got != id {
		t.Errorf("after its lifetime: %q, %v", got, err)
	}
	version, _ := k.Key(delivery.ID("generic:cl", "ann@example.com", 1), due.Add(KeyLifetime))
	if version == key {
		t.Error("a digest's key is a version's")
	}
	if _, err := k.Key(delivery.DigestID("ann@example.com", due.Add(7*time.Minute)), due); err == nil {
		t.Error("a due time off the quarter hour keyed")
	}
	// A due time is the reader's hour in their zone, or a clock change's
	// instant (digest.Next): on a quarter hour wherever every offset the
	// zone takes is a whole number of quarter hours.
	year := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, zone := range prefs.Zones("") {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for at := year; at.Before(year.AddDate(1, 0, 0)); at = at.Add(time.Hour) {
			if _, off := at.In(loc).Zone(); off%(15*60) != 0 {
				t.Fatalf("%s at %s: offset %ds, not on a quarter hour", zone, at, off)
			}
		}
		p := prefs.Default()
		p.TimeZone = zone
		for hour := range 24 {
			p.DigestHour = hour
			for _, day := range []int{0, 68, 88, 180, 298, 305} { // around the clock changes
				per := digest.Next(p, year.AddDate(0, 0, day))
				id := delivery.DigestID("ann@example.com", per.Due)
				key, err := k.Key(id, per.Due)
				if err != nil {
					t.Fatalf("%s at %d: %v", zone, hour, err)
				}
				if got, err := k.Open(key, per.Due); err != nil || got != id {
					t.Fatalf("%s at %d: Open = %q, %v; want %q", zone, hour, got, err, id)
				}
			}
		}
	}
}
