package prefs

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// What the page's form saves: every field replaced, the record's
// revision as the form names it, mutes only of repositories the page
// offered; anything missing, repeated, unknown or out of range is refused
// naming its field, with nothing to save.
// Rules: R-PREF-2.
func TestParseForm_FieldsAndRefusals(t *testing.T) {
	current := Preferences{Mode: Daily, DigestHour: 7, TimeZone: "Europe/Berlin", Muted: []string{"github:o/a"}, Rev: 3}.Normalized()
	good := "rev=3&mode=mixed&digest_hour=0&time_zone=Asia%2FTokyo&min_severity=error&mute=github%3Ao%2Fb&unsubscribe_all=1"
	p, err := ParseForm([]byte(good), current, "github:o/b")
	if err != nil {
		t.Fatal(err)
	}
	want := Preferences{Mode: Mixed, DigestHour: 0, TimeZone: "Asia/Tokyo", MinSeverity: SeverityError, Muted: []string{"github:o/b"}, UnsubscribedAll: true, Rev: 3}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed %+v\nwant   %+v (github:o/a unchecked: unmuted)", p, want)
	}
	if p, err := ParseForm([]byte("rev=3&mode=instant&digest_hour=9&time_zone=UTC&min_severity=none"), current, ""); err != nil || p.MinSeverity != "" || p.Muted != nil || p.UnsubscribedAll {
		t.Fatalf("nothing checked: %+v, %v", p, err)
	}
	for _, c := range []struct {
		field, body string
	}{
		{"rev", strings.Replace(good, "rev=3", "rev=x", 1)},
		{"rev", strings.Replace(good, "rev=3", "rev=-1", 1)},
		{"rev", strings.Replace(good, "rev=3&", "", 1)},
		{"mode", strings.Replace(good, "mode=mixed", "mode=hourly", 1)},
		{"mode", good + "&mode=daily"},
		{"digest_hour", strings.Replace(good, "digest_hour=0", "digest_hour=24", 1)},
		{"digest_hour", strings.Replace(good, "digest_hour=0", "digest_hour=+7", 1)},
		{"digest_hour", strings.Replace(good, "digest_hour=0", "digest_hour=007", 1)},
		{"time_zone", strings.Replace(good, "Asia%2FTokyo", "Local", 1)},
		{"time_zone", strings.Replace(good, "Asia%2FTokyo", "..%2Fetc%2Fpasswd", 1)},
		{"time_zone", strings.Replace(good, "time_zone=Asia%2FTokyo&", "", 1)},
		{"min_severity", strings.Replace(good, "min_severity=error", "min_severity=", 1)},
		{"min_severity", strings.Replace(good, "min_severity=error", "min_severity=critical", 1)},
		{"mute", good + "&mute=github%3Aother%2Frepo"},
		{"unsubscribe_all", strings.Replace(good, "unsubscribe_all=1", "unsubscribe_all=yes", 1)},
		{"confirm", good + "&confirm=1"},
		{"body", "rev=3&mode=%zz"},
		{"body", "rev=3&mute=" + strings.Repeat("x", MaxFormBytes)},
	} {
		_, err := ParseForm([]byte(c.body), current, "github:o/b")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Message == "" {
			t.Errorf("%.80s: %v, want a field error naming %s", c.body, err, c.field)
		}
	}
}

// The form a page submits reads back as the record it shows.
// Rules: R-PREF-2.
func TestFormBody_RoundTrip(t *testing.T) {
	current := Preferences{Muted: []string{"gerrit:p", "github:o/a"}, Rev: 8}.Normalized()
	for _, p := range []Preferences{
		{Mode: Instant, DigestHour: 9, TimeZone: "UTC", Rev: 8},
		{Mode: Daily, DigestHour: 23, TimeZone: "America/Argentina/Buenos_Aires", MinSeverity: SeverityWarning, Muted: []string{"gerrit:p"}, Rev: 8},
		{Mode: Mixed, DigestHour: 0, TimeZone: "Asia/Kathmandu", MinSeverity: SeverityInfo, Muted: []string{"generic:", "gerrit:p", "github:o/a"}, UnsubscribedAll: true, Rev: 8},
	} {
		got, err := ParseForm([]byte(FormBody(p)), current, "generic:")
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
}

// FuzzParseForm: any body, any current mutes, any offered repository.
// Properties: no panic; a refusal is a *FieldError naming a short field,
// with a message; an accepted record validates, mutes only offered
// repositories, and its FormBody parses back to itself.
func FuzzParseForm(f *testing.F) {
	f.Add("rev=0&mode=instant&digest_hour=9&time_zone=UTC&min_severity=none", "", "")
	f.Add("rev=2&mode=daily&digest_hour=18&time_zone=Europe%2FBerlin&min_severity=warning&mute=github%3Aacme%2Fbilling&unsubscribe_all=1",
		"github:acme/billing", "github:acme/web")
	f.Add("rev=1&mode=mixed&digest_hour=0&time_zone=Asia%2FKolkata&min_severity=error&mute=generic%3A&mute=generic%3A", "", "generic:")
	f.Add("rev=1&mode=mixed&mode=daily", "a,b", "c")
	f.Add("time_zone=%2E%2E%2Fetc%2Fpasswd&rev=1&mode=daily&digest_hour=1&min_severity=info", "", "")
	f.Fuzz(func(t *testing.T, body, muted, link string) {
		current := Preferences{Rev: 1}
		if muted != "" {
			current.Muted = strings.Split(muted, ",")
		}
		p, err := ParseForm([]byte(body), current, link)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || len(fe.Field) > 48 || fe.Message == "" {
				t.Fatalf("refusal %v (%T) is not a field error naming a short field", err, err)
			}
			if !utf8.ValidString(fe.Message) && utf8.ValidString(body) {
				t.Fatalf("message %q is not valid UTF-8", fe.Message)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted %+v does not validate: %v", p, err)
		}
		offered := Offered(current, link)
		for _, r := range p.Muted {
			if !slices.Contains(offered, r) {
				t.Fatalf("muted %q, not offered %q", r, offered)
			}
		}
		again, err := ParseForm([]byte(FormBody(p)), current, link)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("FormBody(%+v) reads back %+v, %v", p, again, err)
		}
	})
}
