// Package prefs holds what a recipient chose about Criticizer's email:
// how it is delivered (instant, a daily digest, or both mixed), the
// lowest severity they want to read, the repositories they muted and
// whether they left every email. It is the pure domain of the preference
// record; the store keeps it under PREF#<recipient id> and the
// preference page (internal/api) edits it.
//
// A recipient is named by unsubscribe.RecipientID, never by address.
//
// One concept, one stored set: muting a repository here and the
// "unsubscribe from this repository" of an email's one-click link are the
// same thing, kept in the same set (Muted). Leaving every email is
// UnsubscribedAll, whichever way it was asked.
package prefs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mode is how a recipient's critiques are delivered.
type Mode string

// The delivery modes.
const (
	// Instant mails each critique when it is ready (the default).
	Instant Mode = "instant"
	// Daily gathers the day's critiques into one digest, sent at
	// DigestHour in TimeZone.
	Daily Mode = "daily"
	// Mixed mails critiques with an error at once and gathers the rest
	// into the daily digest.
	Mixed Mode = "mixed"
)

// Modes are the delivery modes in the order the page offers them.
func Modes() []Mode { return []Mode{Instant, Daily, Mixed} }

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// Severities a recipient may choose as their minimum, lowest first
// (critic's names; "" is none: every finding the deployment mails).
const (
	SeverityNone    = ""
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Severities are the minimum severities the page offers, in order.
func Severities() []string {
	return []string{SeverityNone, SeverityInfo, SeverityWarning, SeverityError}
}

// Bounds on what a record holds: a recipient (or anyone holding their
// link) cannot grow the item without end.
const (
	// MaxMuted is the most repositories a recipient can mute; a one-click
	// unsubscribe past it leaves every email instead (store.Recipients).
	MaxMuted = 500
	// MaxRepository is the longest repository key kept: a source name and
	// a changelist id of at most 256 bytes (internal/webhook).
	MaxRepository = 300
	// maxZone is the longest time zone name accepted; the IANA database's
	// longest is 32 bytes.
	maxZone = 64
)

// DefaultDigestHour is the digest hour of a recipient who never chose one:
// 9 in the morning, in their time zone.
const DefaultDigestHour = 9

// Preferences is one recipient's preference record.
type Preferences struct {
	// Mode is how critiques are delivered; "" reads as Instant.
	Mode Mode
	// DigestHour is the hour of the day (0–23, in TimeZone) the daily
	// digest is sent in Daily and Mixed modes.
	DigestHour int
	// TimeZone is an IANA zone name ("Europe/Berlin"); "" is UTC.
	TimeZone string
	// MinSeverity is the lowest severity the recipient wants mailed
	// (Severities); "" is every finding. It can only narrow what the
	// deployment's and the repository's minimum let through, never widen
	// it.
	MinSeverity string
	// Muted are the repositories (unsubscribe.Repository keys) the
	// recipient mutes: no email about their changelists. Sorted, no
	// repeats.
	Muted []string
	// UnsubscribedAll: the recipient left every Criticizer email.
	UnsubscribedAll bool

	// Rev counts the record's writes; 0 is a record never written. A save
	// names the Rev it was made from and fails if another write came
	// between (store.ErrConflict).
	Rev int
	// UpdatedAt is the last write's time; zero for a record never written.
	UpdatedAt time.Time
}

// Default is the record of a recipient who never chose anything: instant
// delivery of every finding, digests (when chosen) at 9 UTC.
func Default() Preferences {
	return Preferences{Mode: Instant, DigestHour: DefaultDigestHour, TimeZone: "UTC"}
}

// Normalized is p with the defaults of its empty names filled in (Mode,
// TimeZone) and Muted sorted without repeats. (A stored record without a
// digest hour reads as DefaultDigestHour: the store fills it, since 0 is
// an hour.)
func (p Preferences) Normalized() Preferences {
	if p.Mode == "" {
		p.Mode = Instant
	}
	if p.TimeZone == "" {
		p.TimeZone = "UTC"
	}
	if len(p.Muted) > 0 {
		p.Muted = slices.Compact(slices.Sorted(slices.Values(p.Muted)))
	} else {
		p.Muted = nil
	}
	return p
}

// Mutes reports whether the recipient muted repository.
func (p Preferences) Mutes(repository string) bool { return slices.Contains(p.Muted, repository) }

// Stops reports whether the recipient gets no email about repository:
// they left every email, or muted it.
func (p Preferences) Stops(repository string) bool { return p.UnsubscribedAll || p.Mutes(repository) }

// Location is the recipient's time zone (UTC if it does not load: Validate
// keeps such a name from being saved).
func (p Preferences) Location() *time.Location {
	loc, err := LoadZone(p.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// FieldError is a preference that cannot be saved, naming its field as the
// form and the JSON answer name it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate checks every field and returns the first *FieldError, or nil.
func (p Preferences) Validate() error {
	switch {
	case p.Mode != "" && !p.Mode.Valid():
		return &FieldError{"mode", fmt.Sprintf("%q is not a delivery mode: want instant, daily or mixed", clip(string(p.Mode)))}
	case p.DigestHour < 0 || p.DigestHour > 23:
		return &FieldError{"digest_hour", fmt.Sprintf("%d is not an hour: want 0 to 23", p.DigestHour)}
	case !slices.Contains(Severities(), p.MinSeverity):
		return &FieldError{"min_severity", fmt.Sprintf("%q is not a severity: want info, warning, error or none", clip(p.MinSeverity))}
	case len(p.Muted) > MaxMuted:
		return &FieldError{"mute", fmt.Sprintf("%d repositories muted: at most %d", len(p.Muted), MaxMuted)}
	}
	if _, err := LoadZone(p.TimeZone); err != nil {
		return &FieldError{"time_zone", err.Error()}
	}
	for _, r := range p.Muted {
		if r == "" || len(r) > MaxRepository {
			return &FieldError{"mute", fmt.Sprintf("a repository name of %d bytes: want 1 to %d", len(r), MaxRepository)}
		}
	}
	return nil
}

// errZone is a time zone name LoadZone refuses.
var errZone = errors.New("not an IANA time zone")

// LoadZone loads an IANA time zone by name with time.LoadLocation; "" is
// UTC. "Local" (the server's zone, not the recipient's) and names that are
// not of the database's form are refused before any lookup. The lookup
// needs the zone database: a function that validates zones imports
// time/tzdata (functions/intake), since a Lambda runtime image need not
// ship one.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if len(name) > maxZone || name == "Local" || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-") != "" ||
		strings.HasPrefix(name, "/") || strings.Contains(name, "//") {
		return nil, fmt.Errorf("%q: %w", clip(name), errZone)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", clip(name), errZone)
	}
	return loc, nil
}

// clip bounds a value echoed in an error message.
func clip(s string) string {
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
