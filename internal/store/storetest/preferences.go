package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
)

// Preferences runs the preference store's suite against the stores open
// returns (R-PREF-1): a recipient who chose nothing has the defaults; a
// save keeps every field and is read back alike by Preferences and by
// Standings (the notifier's one read); a save made from a stale read
// saves nothing; a one-click mute and unsubscribe land in the same record
// the page edits, without undoing its fields; a bad record is refused
// whole.
func Preferences(t *testing.T, open func(t *testing.T) store.Preferences) {
	ctx := context.Background()
	read := func(t *testing.T, s store.Preferences, id string) prefs.Preferences {
		t.Helper()
		p, err := s.Preferences(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	standing := func(t *testing.T, s store.Preferences, id string) delivery.Standing {
		t.Helper()
		st, err := s.Standings(ctx, []string{id, "r_someone_else", id})
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 2 {
			t.Fatalf("standings of 2 distinct ids: %d entries", len(st))
		}
		return st[id]
	}
	same := func(a, b prefs.Preferences) bool {
		return a.Mode == b.Mode && a.DigestHour == b.DigestHour && a.TimeZone == b.TimeZone && a.MinSeverity == b.MinSeverity &&
			slices.Equal(a.Muted, b.Muted) && a.UnsubscribedAll == b.UnsubscribedAll && a.Rev == b.Rev
	}

	// Rules: R-PREF-1.
	t.Run("DefaultsForSomeoneWhoChoseNothing", func(t *testing.T) {
		s := open(t)
		want := prefs.Default().Normalized()
		if got := read(t, s, "r_new"); !same(got, want) || got.Rev != 0 {
			t.Fatalf("preferences of a new recipient %+v, want the defaults %+v", got, want)
		}
		if got := standing(t, s, "r_new"); got.Suppressed || !same(got.Preferences, want) {
			t.Fatalf("standing of a new recipient %+v, want no suppression and the defaults", got)
		}
		if _, skip := standing(t, s, "r_new").SkipAs("generic:acme/x"); skip {
			t.Fatal("a new recipient is skipped")
		}
	})

	// Rules: R-PREF-1.
	t.Run("SaveReadBackEverywhere", func(t *testing.T) {
		s := open(t)
		p := read(t, s, "r_ann")
		p.Mode, p.DigestHour, p.TimeZone, p.MinSeverity = prefs.Mixed, 0, "Asia/Kolkata", prefs.SeverityError
		p.Muted = []string{"github:o/b", "github:o/a", "github:o/b"}
		got, err := s.SavePreferences(ctx, "r_ann", p)
		if err != nil {
			t.Fatal(err)
		}
		want := p.Normalized()
		want.Rev = 1
		if !same(got, want) || got.UpdatedAt.IsZero() || !slices.Equal(got.Muted, []string{"github:o/a", "github:o/b"}) {
			t.Fatalf("saved %+v, want %+v at rev 1 with a time", got, want)
		}
		if r := read(t, s, "r_ann"); !same(r, want) {
			t.Fatalf("read back %+v, want %+v (hour 0 is midnight, not unset)", r, want)
		}
		st := standing(t, s, "r_ann")
		if !same(st.Preferences, want) {
			t.Fatalf("standing's preferences %+v, want %+v", st.Preferences, want)
		}
		if status, skip := st.SkipAs("github:o/a"); !skip || status != delivery.StatusSkippedUnsubscribed {
			t.Fatalf("a muted repository: %q, %v", status, skip)
		}
		if _, skip := st.SkipAs("github:o/c"); skip {
			t.Fatal("another repository is skipped")
		}
		// Unmute everything and take the defaults back: the set empties.
		got.Muted, got.MinSeverity, got.Mode = nil, prefs.SeverityNone, prefs.Instant
		if got, err = s.SavePreferences(ctx, "r_ann", got); err != nil {
			t.Fatal(err)
		}
		if r := read(t, s, "r_ann"); len(r.Muted) != 0 || r.MinSeverity != "" || r.Mode != prefs.Instant || r.Rev != 2 || r.TimeZone != "Asia/Kolkata" {
			t.Fatalf("after unmuting: %+v", r)
		}
		if other := read(t, s, "r_bo"); other.Rev != 0 || other.MinSeverity != "" {
			t.Fatalf("another recipient changed: %+v", other)
		}
	})

	// Rules: R-PREF-1.
	t.Run("StaleSaveSavesNothing", func(t *testing.T) {
		s := open(t)
		page := read(t, s, "r_cy") // the page is opened
		twin := page               // and again in another tab
		page.MinSeverity = prefs.SeverityWarning
		if _, err := s.SavePreferences(ctx, "r_cy", page); err != nil {
			t.Fatal(err)
		}
		twin.Mode = prefs.Daily
		if _, err := s.SavePreferences(ctx, "r_cy", twin); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a save from a stale read: %v, want ErrConflict", err)
		}
		if r := read(t, s, "r_cy"); r.Mode != prefs.Instant || r.MinSeverity != prefs.SeverityWarning || r.Rev != 1 {
			t.Fatalf("after the stale save: %+v, want the first save only", r)
		}
		// A one-click unsubscribe between the page's read and its save
		// moves the revision: the page cannot undo it.
		page = read(t, s, "r_cy")
		if err := s.Mute(ctx, "r_cy", "gitlab:g/p"); err != nil {
			t.Fatal(err)
		}
		page.Muted = nil
		if _, err := s.SavePreferences(ctx, "r_cy", page); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a save across a mute: %v, want ErrConflict", err)
		}
		if r := read(t, s, "r_cy"); !r.Mutes("gitlab:g/p") || r.MinSeverity != prefs.SeverityWarning {
			t.Fatalf("the mute was undone or the page's fields lost: %+v", r)
		}
	})

	// Rules: R-PREF-1, R-UNSUB-2.
	t.Run("MuteAndUnsubscribeAllKeepThePagesFields", func(t *testing.T) {
		s := open(t)
		p := read(t, s, "r_di")
		p.MinSeverity, p.Mode, p.DigestHour, p.TimeZone = prefs.SeverityError, prefs.Daily, 17, "America/Sao_Paulo"
		if _, err := s.SavePreferences(ctx, "r_di", p); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a repeated click changes nothing but the revision
			if err := s.Mute(ctx, "r_di", "generic:"); err != nil {
				t.Fatal(err)
			}
		}
		r := read(t, s, "r_di")
		if !slices.Equal(r.Muted, []string{"generic:"}) || r.UnsubscribedAll || r.Rev != 3 ||
			r.MinSeverity != prefs.SeverityError || r.Mode != prefs.Daily || r.DigestHour != 17 || r.TimeZone != "America/Sao_Paulo" {
			t.Fatalf("after muting twice: %+v", r)
		}
		if err := s.UnsubscribeAll(ctx, "r_di"); err != nil {
			t.Fatal(err)
		}
		r = read(t, s, "r_di")
		if !r.UnsubscribedAll || !r.Mutes("generic:") || r.MinSeverity != prefs.SeverityError || r.Rev != 4 {
			t.Fatalf("after unsubscribing from all: %+v", r)
		}
		if status, skip := standing(t, s, "r_di").SkipAs("github:any/thing"); !skip || status != delivery.StatusSkippedUnsubscribed {
			t.Fatalf("unsubscribed from all: %q, %v", status, skip)
		}
		// The page can subscribe again: the token proves the reader.
		r.UnsubscribedAll = false
		if _, err := s.SavePreferences(ctx, "r_di", r); err != nil {
			t.Fatal(err)
		}
		if _, skip := standing(t, s, "r_di").SkipAs("github:any/thing"); skip {
			t.Fatal("subscribed again, still skipped")
		}
		// A mute never starts from nothing as anything but the defaults.
		if err := s.Mute(ctx, "r_new", "github:o/r"); err != nil {
			t.Fatal(err)
		}
		if r := read(t, s, "r_new"); r.Mode != prefs.Instant || r.DigestHour != prefs.DefaultDigestHour || r.TimeZone != "UTC" || !r.Mutes("github:o/r") {
			t.Fatalf("a first mute: %+v, want the defaults and the mute", r)
		}
	})

	// Rules: R-PREF-1.
	t.Run("BadRecordRefusedWhole", func(t *testing.T) {
		s := open(t)
		for _, c := range []struct {
			field string
			edit  func(*prefs.Preferences)
		}{
			{"mode", func(p *prefs.Preferences) { p.Mode = "hourly" }},
			{"digest_hour", func(p *prefs.Preferences) { p.DigestHour = 24 }},
			{"digest_hour", func(p *prefs.Preferences) { p.DigestHour = -1 }},
			{"time_zone", func(p *prefs.Preferences) { p.TimeZone = "Mars/Olympus_Mons" }},
			{"time_zone", func(p *prefs.Preferences) { p.TimeZone = "Local" }},
			{"min_severity", func(p *prefs.Preferences) { p.MinSeverity = "critical" }},
			{"mute", func(p *prefs.Preferences) { p.Muted = []string{string(make([]byte, prefs.MaxRepository+1))} }},
		} {
			p := read(t, s, "r_ed")
			p.MinSeverity = prefs.SeverityInfo // a good change beside the bad one
			c.edit(&p)
			_, err := s.SavePreferences(ctx, "r_ed", p)
			var fe *prefs.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("%s: %v, want a field error naming %s", c.field, err, c.field)
			}
		}
		if r := read(t, s, "r_ed"); r.Rev != 0 || r.MinSeverity != "" {
			t.Fatalf("a refused save wrote something: %+v", r)
		}
	})

	// Rules: R-PREF-1.
	t.Run("FullMuteSetLeavesEverything", func(t *testing.T) {
		s := open(t)
		p := read(t, s, "r_fu")
		for i := range prefs.MaxMuted {
			p.Muted = append(p.Muted, fmt.Sprintf("github:o/r%03d", i))
		}
		if _, err := s.SavePreferences(ctx, "r_fu", p); err != nil {
			t.Fatal(err)
		}
		p.Muted = append(p.Muted, "github:o/one-more")
		var fe *prefs.FieldError
		if _, err := s.SavePreferences(ctx, "r_fu", p); !errors.As(err, &fe) || fe.Field != "mute" {
			t.Fatalf("a save past the bound: %v, want a field error naming mute", err)
		}
		if err := s.Mute(ctx, "r_fu", "github:o/r007"); err != nil { // muted already: nothing changes
			t.Fatal(err)
		}
		if r := read(t, s, "r_fu"); r.UnsubscribedAll || len(r.Muted) != prefs.MaxMuted {
			t.Fatalf("muting a muted repository of a full set: all=%v, %d muted", r.UnsubscribedAll, len(r.Muted))
		}
		if err := s.Mute(ctx, "r_fu", "github:o/one-more"); err != nil {
			t.Fatal(err)
		}
		if r := read(t, s, "r_fu"); !r.UnsubscribedAll || len(r.Muted) != prefs.MaxMuted {
			t.Fatalf("a mute past the bound: all=%v, %d muted; want every email left, the set as it was", r.UnsubscribedAll, len(r.Muted))
		}
	})
}
