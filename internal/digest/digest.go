// Package digest holds the pure rules of the daily digest (R-DIGEST-*):
// which critiques a recipient gets at once and which wait for their
// digest, when that digest is due, and what it shows. No AWS here; the
// notifier carries the rules out on the outbox (internal/pipeline,
// notify_digest.go) and the store keeps the rows (internal/store).
package digest

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
)

// Bounds on a digest: anything an outsider's traffic can grow is capped,
// and what the caps leave out is said and counted.
const (
	// MaxEntries is how many version rows one digest gathers (its entries
	// are kept on its row: about 40 bytes each). A version past it goes
	// into the next period's digest: later, never lost.
	MaxEntries = 500
	// MaxChangelists is how many changelists one digest shows; the email
	// says how many more it covered.
	MaxChangelists = 50
	// MaxFindings is how many findings a digest shows per changelist, the
	// most severe first; the email says how many more the review has.
	MaxFindings = 10
	// LookAhead is how many versions above the newest one a digest
	// gathered of a changelist are looked at for one that reached the
	// recipient on its own (mixed mode): the changelist is then left out.
	LookAhead = 10
)

// Period is one of a recipient's daily digests: the local date it
// covers and the instant it is due.
type Period struct {
	// Date is the recipient's local date of the digest ("2026-11-28").
	Date string
	// Due is DigestHour:00 of Date in the recipient's time zone, in UTC.
	Due time.Time
}

// Next is the period a critique ready at t goes into: the first digest
// due strictly after t, at the recipient's digest hour in their time
// zone. Each local date has exactly one due instant, whatever daylight
// saving time does to it: on a spring-forward day that skips the hour the
// digest goes at the jump (2:00 skipped to 3:00: at 3:00), and of an
// autumn day's repeated hour time.Date picks one. So a day has one
// digest, never two or none.
func Next(p prefs.Preferences, t time.Time) Period {
	loc := p.Location()
	l := t.In(loc)
	hour := min(max(p.DigestHour, 0), 23)
	for d := 0; ; d++ {
		due := time.Date(l.Year(), l.Month(), l.Day()+d, hour, 0, 0, 0, loc)
		// An hour the clocks skip that day: time.Date may give the instant
		// before the jump, whose wall time is an hour the reader did not
		// choose. The digest goes at the jump instead, the first instant
		// whose wall time reaches their hour.
		for due.In(loc).Hour() < hour && due.In(loc).Day() == time.Date(l.Year(), l.Month(), l.Day()+d, 12, 0, 0, 0, loc).Day() {
			due = due.Add(time.Minute)
		}
		if due.After(t) {
			// The date asked for, not due's own: a skipped hour moves the
			// instant, never the date it belongs to.
			date := time.Date(l.Year(), l.Month(), l.Day()+d, 12, 0, 0, 0, time.UTC)
			return Period{Date: date.Format(time.DateOnly), Due: due.UTC()}
		}
	}
}

// After is the period after one that was closed without an entry (the
// entry came too late, or found it full): the next due strictly after
// both now and that period's due time.
func After(p prefs.Preferences, closedDue, now time.Time) Period {
	return Next(p, later(closedDue, now))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Instant reports whether a critique goes to its recipient in an email of
// its own under their mode: always in instant mode (the default, and an
// unknown one), never in daily, and in mixed only when its most severe
// finding — as they are mailed it, after their own filters — is an error.
// severity is the rendered message's X-Criticizer-Severity value.
func Instant(mode prefs.Mode, severity string) bool {
	switch mode {
	case prefs.Daily:
		return false
	case prefs.Mixed:
		return severity == prefs.SeverityError
	}
	return true
}

// Selection is what a digest shows of the version rows it gathered.
type Selection struct {
	// Shown are the changelists shown, each by the newest version row
	// gathered of it, most severe first (then oldest first); at most
	// MaxChangelists.
	Shown []delivery.Row
	// More is how many changelists past the cap were left unshown.
	More int
	// Muted and Superseded count the changelists left out: in a
	// repository the recipient muted since, or with a newer version that
	// reached them on its own.
	Muted, Superseded int
}

// Changelists is how many changelists the digest covers, shown or not.
func (s Selection) Changelists() int { return len(s.Shown) + s.More }

// Empty reports whether there is nothing to send.
func (s Selection) Empty() bool { return len(s.Shown) == 0 }

// Select decides what a digest shows of its entries (the version rows it
// gathered): per changelist the newest version, unless stops says the
// recipient muted it or superseded says a newer version than that reached
// them on its own. Entries of one changelist other than its newest are
// covered by it: the digest shows the newest version's critique, which
// is what an email would have shown after a burst of pushes (R-QUIET-3).
func Select(entries []delivery.Row, stops func(changelistKey string) bool, superseded func(changelistKey string, version int) bool) Selection {
	newest := map[string]delivery.Row{}
	for _, e := range entries {
		if cur, ok := newest[e.ChangelistKey]; !ok || e.ReviewVersion > cur.ReviewVersion {
			newest[e.ChangelistKey] = e
		}
	}
	var s Selection
	var shown []delivery.Row
	for cl, e := range newest {
		switch {
		case stops(cl):
			s.Muted++
		case superseded(cl, e.ReviewVersion):
			s.Superseded++
		default:
			shown = append(shown, e)
		}
	}
	slices.SortFunc(shown, func(a, b delivery.Row) int {
		return cmp.Or(cmp.Compare(rank(a.Message.Severity), rank(b.Message.Severity)),
			a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ChangelistKey, b.ChangelistKey))
	})
	if len(shown) > MaxChangelists {
		s.More = len(shown) - MaxChangelists
		shown = shown[:MaxChangelists]
	}
	s.Shown = shown
	return s
}

// rank orders the X-Criticizer-Severity values, most severe first.
func rank(sev string) int {
	switch sev {
	case prefs.SeverityError:
		return 0
	case prefs.SeverityWarning:
		return 1
	case prefs.SeverityInfo:
		return 2
	}
	return 3
}
