package prefs

import (
	"net/url"
	"slices"
	"strconv"
)

// The preference page's form (R-PREF-2): what a browser POSTs, without
// JavaScript, as application/x-www-form-urlencoded. Every field is the
// name a FieldError (and so a 400) names:
//
//	rev              the record's revision the page was rendered from (hidden)
//	mode             instant | daily | mixed (radio buttons)
//	digest_hour      0..23 (select)
//	time_zone        an IANA zone name (select)
//	min_severity     none | info | warning | error (select)
//	mute             a repository key, once per muted repository (checkboxes)
//	unsubscribe_all  1 when checked (checkbox)
//
// A repository can be muted from the page only if the page offered it: a
// repository already muted, or the one of the email the link came from.
// Anything else is refused, so a form cannot grow the set beyond what
// the reader was mailed about.

// Form field names.
const (
	FieldRev            = "rev"
	FieldMode           = "mode"
	FieldDigestHour     = "digest_hour"
	FieldTimeZone       = "time_zone"
	FieldMinSeverity    = "min_severity"
	FieldMute           = "mute"
	FieldUnsubscribeAll = "unsubscribe_all"
)

// MaxFormBytes bounds a form body: every offered repository muted, at
// most MaxMuted+1 of MaxRepository bytes escaped, with room to spare.
const MaxFormBytes = 4 * (MaxMuted + 1) * (MaxRepository + 8)

// severityNone is how the form names the empty minimum severity.
const severityNone = "none"

// Offered are the repositories the page lists with a mute checkbox: the
// ones muted already, then the link's own when it is not among them.
func Offered(current Preferences, linkRepository string) []string {
	out := slices.Clone(current.Normalized().Muted)
	if linkRepository != "" && !slices.Contains(out, linkRepository) {
		out = append(out, linkRepository)
	}
	return out
}

// ParseForm reads a POSTed form into the record it asks to save: the
// recipient's current record with every field the form sets replaced,
// at the revision the form names. Any field missing, repeated, unknown
// or out of range is a *FieldError naming it, and nothing is to be saved.
// linkRepository is the repository the link offers (Claims.Repository).
func ParseForm(body []byte, current Preferences, linkRepository string) (Preferences, error) {
	if len(body) > MaxFormBytes {
		return Preferences{}, &FieldError{"body", "the form is " + strconv.Itoa(len(body)) + " bytes: at most " + strconv.Itoa(MaxFormBytes)}
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return Preferences{}, &FieldError{"body", "not a form (application/x-www-form-urlencoded)"}
	}
	for k := range v {
		switch k {
		case FieldRev, FieldMode, FieldDigestHour, FieldTimeZone, FieldMinSeverity, FieldMute, FieldUnsubscribeAll:
		case "":
			return Preferences{}, &FieldError{"body", "a value without a field name"}
		default:
			return Preferences{}, &FieldError{clip(k), "not a field of the preference form"}
		}
	}
	one := func(name string) (string, error) {
		switch vs := v[name]; len(vs) {
		case 0:
			return "", &FieldError{name, "missing"}
		case 1:
			return vs[0], nil
		default:
			return "", &FieldError{name, "given " + strconv.Itoa(len(vs)) + " times: once"}
		}
	}
	p := current.Normalized()
	p.Muted = nil
	s, err := one(FieldRev)
	if err != nil {
		return Preferences{}, err
	}
	if p.Rev, err = strconv.Atoi(s); err != nil || p.Rev < 0 || len(s) > 9 {
		return Preferences{}, &FieldError{FieldRev, "not a revision of this page"}
	}
	if s, err = one(FieldMode); err != nil {
		return Preferences{}, err
	}
	if p.Mode = Mode(s); !p.Mode.Valid() {
		return Preferences{}, &FieldError{FieldMode, "choose instant, daily or mixed"}
	}
	if s, err = one(FieldDigestHour); err != nil {
		return Preferences{}, err
	}
	if p.DigestHour, err = strconv.Atoi(s); err != nil || p.DigestHour < 0 || p.DigestHour > 23 || len(s) > 2 {
		return Preferences{}, &FieldError{FieldDigestHour, "choose an hour from 0 to 23"}
	}
	if p.TimeZone, err = one(FieldTimeZone); err != nil {
		return Preferences{}, err
	}
	if _, err := LoadZone(p.TimeZone); err != nil {
		return Preferences{}, &FieldError{FieldTimeZone, "choose a time zone from the list (" + err.Error() + ")"}
	}
	if s, err = one(FieldMinSeverity); err != nil {
		return Preferences{}, err
	}
	switch s {
	case severityNone:
		p.MinSeverity = SeverityNone
	case SeverityInfo, SeverityWarning, SeverityError:
		p.MinSeverity = s
	default:
		return Preferences{}, &FieldError{FieldMinSeverity, "choose none, info, warning or error"}
	}
	offered := Offered(current, linkRepository)
	for _, r := range v[FieldMute] {
		if !slices.Contains(offered, r) {
			return Preferences{}, &FieldError{FieldMute, "not a repository this page offers"}
		}
		p.Muted = append(p.Muted, r)
	}
	switch vs := v[FieldUnsubscribeAll]; {
	case len(vs) == 0:
		p.UnsubscribedAll = false
	case len(vs) == 1 && vs[0] == "1":
		p.UnsubscribedAll = true
	default:
		return Preferences{}, &FieldError{FieldUnsubscribeAll, "checked (1) or left out"}
	}
	p = p.Normalized()
	if err := p.Validate(); err != nil {
		return Preferences{}, err
	}
	return p, nil
}

// FormBody is the form a browser POSTs for p from the page: the encoding
// ParseForm reads back (what the tests submit, and the fuzz target's
// round trip).
func FormBody(p Preferences) string {
	v := url.Values{}
	v.Set(FieldRev, strconv.Itoa(p.Rev))
	v.Set(FieldMode, string(p.Mode))
	v.Set(FieldDigestHour, strconv.Itoa(p.DigestHour))
	v.Set(FieldTimeZone, p.TimeZone)
	sev := p.MinSeverity
	if sev == SeverityNone {
		sev = severityNone
	}
	v.Set(FieldMinSeverity, sev)
	for _, r := range p.Muted {
		v.Add(FieldMute, r)
	}
	if p.UnsubscribedAll {
		v.Set(FieldUnsubscribeAll, "1")
	}
	return v.Encode()
}

// MinSeverityValue is how the form names a minimum severity ("none" for
// the empty one).
func MinSeverityValue(s string) string {
	if s == SeverityNone {
		return severityNone
	}
	return s
}
