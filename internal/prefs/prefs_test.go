package prefs

import (
	"errors"
	"slices"
	"testing"
)

// The record's defaults, and what Validate refuses, naming the field.
// Rules: R-PREF-1.
func TestPreferences_DefaultsAndValidate(t *testing.T) {
	d := Default().Normalized()
	if d.Mode != Instant || d.DigestHour != 9 || d.TimeZone != "UTC" || d.MinSeverity != "" || d.Muted != nil || d.Validate() != nil {
		t.Fatalf("defaults %+v", d)
	}
	if n := (Preferences{Muted: []string{"b", "a", "b"}}).Normalized(); n.Mode != Instant || n.TimeZone != "UTC" || !slices.Equal(n.Muted, []string{"a", "b"}) {
		t.Fatalf("normalized %+v", n)
	}
	ok := Preferences{Mode: Mixed, DigestHour: 23, TimeZone: "Asia/Kathmandu", MinSeverity: SeverityWarning, Muted: []string{"github:o/r"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good record: %v", err)
	}
	for _, c := range []struct {
		field string
		p     Preferences
	}{
		{"mode", Preferences{Mode: "weekly"}},
		{"digest_hour", Preferences{DigestHour: 24}},
		{"digest_hour", Preferences{DigestHour: -1}},
		{"min_severity", Preferences{MinSeverity: "Error"}},
		{"time_zone", Preferences{TimeZone: "Local"}},
		{"time_zone", Preferences{TimeZone: "../../etc/passwd"}},
		{"time_zone", Preferences{TimeZone: "/etc/localtime"}},
		{"time_zone", Preferences{TimeZone: "Europe/Atlantis"}},
		{"time_zone", Preferences{TimeZone: "Europe/Berlin\x00"}},
		{"mute", Preferences{Muted: []string{""}}},
		{"mute", Preferences{Muted: make([]string, MaxMuted+1)}},
	} {
		var fe *FieldError
		if err := c.p.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a field error naming %s", c.p, err, c.field)
		}
	}
}

// Every zone the page offers loads, and a saved zone not among them is
// offered too.
// Rules: R-PREF-1.
func TestZones_AllLoad(t *testing.T) {
	for _, z := range Zones("") {
		if _, err := LoadZone(z); err != nil {
			t.Errorf("offered zone %s: %v", z, err)
		}
	}
	if z := Zones("America/Guatemala"); z[len(z)-1] != "America/Guatemala" || len(z) != len(zones)+1 {
		t.Fatalf("a saved zone not listed is not offered: %v", z[len(z)-3:])
	}
	if len(Zones("Europe/Berlin")) != len(zones) {
		t.Fatal("a listed zone offered twice")
	}
	if p := (Preferences{TimeZone: "Asia/Tokyo"}); p.Location().String() != "Asia/Tokyo" {
		t.Fatalf("location %v", p.Location())
	}
}

// Stops is a mute or leaving everything; nothing else.
// Rules: R-PREF-1.
func TestPreferences_Stops(t *testing.T) {
	p := Preferences{Muted: []string{"github:o/r"}}
	if !p.Stops("github:o/r") || p.Stops("github:o/x") {
		t.Fatal("a mute stops its repository only")
	}
	if !(Preferences{UnsubscribedAll: true}).Stops("github:o/x") {
		t.Fatal("unsubscribed from all does not stop")
	}
}
