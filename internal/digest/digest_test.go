package digest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/digest"
	"github.com/criticizer/criticizer/internal/prefs"
)

func at(t *testing.T, zone, local string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", local, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A critique goes into the first digest due after it is ready, at the
// reader's hour in their zone; one due instant per local date, whatever
// daylight saving time does: a spring-forward day that skips the hour
// still has its digest (an hour later), an autumn day that repeats it has
// one, not two.
// Rules: R-DIGEST-3.
func TestNext_OnePerLocalDayAtTheHourInTheZone(t *testing.T) {
	ny := func(h int) prefs.Preferences {
		return prefs.Preferences{Mode: prefs.Daily, DigestHour: h, TimeZone: "America/New_York"}
	}
	tests := []struct {
		name      string
		p         prefs.Preferences
		ready     time.Time
		wantDate  string
		wantLocal string // the due instant in the zone
	}{
		{"before the hour: today", ny(9), at(t, "America/New_York", "2026-06-10 08:59"), "2026-06-10", "2026-06-10 09:00 EDT"},
		{"at the hour: tomorrow", ny(9), at(t, "America/New_York", "2026-06-10 09:00"), "2026-06-11", "2026-06-11 09:00 EDT"},
		{"after the hour: tomorrow", ny(9), at(t, "America/New_York", "2026-06-10 17:30"), "2026-06-11", "2026-06-11 09:00 EDT"},
		{"spring forward skips 2:00: that day's digest at 3:00", ny(2), at(t, "America/New_York", "2026-03-08 00:30"), "2026-03-08", "2026-03-08 03:00 EDT"},
		{"the day after spring forward: 2:00 again", ny(2), at(t, "America/New_York", "2026-03-08 03:30"), "2026-03-09", "2026-03-09 02:00 EDT"},
		{"fall back repeats 1:00: one digest that day", ny(1), at(t, "America/New_York", "2026-11-01 00:30"), "2026-11-01", "2026-11-01 01:00 EDT"},
		{"midnight, UTC by default", prefs.Preferences{Mode: prefs.Daily, DigestHour: 0}, time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), "2027-01-01", "2027-01-01 00:00 UTC"},
		{"a zone east of UTC: the local date", prefs.Preferences{DigestHour: 8, TimeZone: "Asia/Kolkata"}, time.Date(2026, 6, 10, 22, 0, 0, 0, time.UTC), "2026-06-11", "2026-06-11 08:00 IST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := digest.Next(tt.p, tt.ready)
			loc := tt.p.Location()
			if got.Date != tt.wantDate || got.Due.In(loc).Format("2006-01-02 15:04 MST") != tt.wantLocal || !got.Due.After(tt.ready) {
				t.Errorf("Next = %s due %s; want %s due %s", got.Date, got.Due.In(loc).Format("2006-01-02 15:04 MST"), tt.wantDate, tt.wantLocal)
			}
		})
	}
	// Hour by hour over the two transition days and the days around
	// them, each local date gets exactly one due instant, and Next never
	// skips a date.
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu"} {
		for _, h := range []int{0, 1, 2, 3, 9, 23} {
			p := prefs.Preferences{DigestHour: h, TimeZone: zone}
			dues := map[string]time.Time{}
			start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
			for m := 0; m < 60*24*300; m += 97 {
				ready := start.Add(time.Duration(m) * time.Minute)
				per := digest.Next(p, ready)
				if prev, ok := dues[per.Date]; ok && !prev.Equal(per.Due) {
					t.Fatalf("%s hour %d: %s due at %s and at %s", zone, h, per.Date, prev, per.Due)
				}
				dues[per.Date] = per.Due
			}
			d := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
			for ; d.Before(time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)); d = d.AddDate(0, 0, 1) {
				if _, ok := dues[d.Format(time.DateOnly)]; !ok {
					t.Fatalf("%s hour %d: no digest on %s", zone, h, d.Format(time.DateOnly))
				}
			}
		}
	}
}

// A digest closed without an entry sends it to the next one, due after
// both now and the closed one.
// Rules: R-DIGEST-2.
func TestAfter_TheNextPeriod(t *testing.T) {
	p := prefs.Preferences{DigestHour: 9}
	due := time.Date(2026, 6, 10, 9, 0, 0, 0, time.UTC)
	if got := digest.After(p, due, due.Add(-time.Second)); !got.Due.Equal(due.AddDate(0, 0, 1)) {
		t.Errorf("after a digest due at 9:00, closed at 8:59:59 (never: it closes when due): %s", got.Due)
	}
	if got := digest.After(p, due, due.Add(26*time.Hour)); !got.Due.Equal(due.AddDate(0, 0, 2)) {
		t.Errorf("a day late: %s, want the day after", got.Due)
	}
}

// Instant mode mails everything at once; daily nothing; mixed what has
// an error among the findings the reader is mailed.
// Rules: R-DIGEST-5.
func TestInstant_ByModeAndSeverity(t *testing.T) {
	for _, tt := range []struct {
		mode prefs.Mode
		sev  string
		want bool
	}{
		{prefs.Instant, "info", true}, {"", "none", true}, {prefs.Daily, "error", false},
		{prefs.Mixed, "error", true}, {prefs.Mixed, "warning", false}, {prefs.Mixed, "none", false}, {prefs.Mixed, "", false},
	} {
		if got := digest.Instant(tt.mode, tt.sev); got != tt.want {
			t.Errorf("Instant(%q, %q) = %t", tt.mode, tt.sev, got)
		}
	}
}

// A digest shows each changelist once, by its newest version gathered;
// leaves out a changelist muted since or with a newer version that
// reached the reader on its own; and shows at most MaxChangelists, the
// most severe, counting the rest.
// Rules: R-DIGEST-4.
func TestSelect_NewestPerChangelistMutedSupersededCapped(t *testing.T) {
	t0 := time.Date(2026, 6, 10, 8, 0, 0, 0, time.UTC)
	row := func(cl string, v int, sev string, min int) delivery.Row {
		return delivery.Row{ID: fmt.Sprintf("d_%s_%d", cl, v), ChangelistKey: "generic:" + cl, ReviewVersion: v,
			Message: delivery.Message{Severity: sev}, CreatedAt: t0.Add(time.Duration(min) * time.Minute)}
	}
	entries := []delivery.Row{row("a", 1, "warning", 1), row("a", 3, "info", 3), row("a", 2, "error", 2), row("b", 1, "info", 4),
		row("muted", 1, "error", 5), row("newer", 4, "error", 6), row("c", 1, "error", 7)}
	s := digest.Select(entries, func(cl string) bool { return cl == "generic:muted" },
		func(cl string, v int) bool { return cl == "generic:newer" && v == 4 })
	var got []string
	for _, r := range s.Shown {
		got = append(got, r.ID)
	}
	if fmt.Sprint(got) != "[d_c_1 d_a_3 d_b_1]" || s.Muted != 1 || s.Superseded != 1 || s.More != 0 || s.Changelists() != 3 {
		t.Errorf("shown %v muted %d superseded %d more %d", got, s.Muted, s.Superseded, s.More)
	}
	var many []delivery.Row
	for i := range digest.MaxChangelists + 7 {
		many = append(many, row(fmt.Sprintf("cl%03d", i), 1, "info", i))
	}
	many = append(many, row("late-error", 1, "error", 999))
	s = digest.Select(many, func(string) bool { return false }, func(string, int) bool { return false })
	if len(s.Shown) != digest.MaxChangelists || s.More != 8 || s.Shown[0].ChangelistKey != "generic:late-error" {
		t.Errorf("capped: %d shown, %d more, first %s", len(s.Shown), s.More, s.Shown[0].ChangelistKey)
	}
	if s = digest.Select(entries[4:5], func(string) bool { return true }, nil); !s.Empty() || s.Muted != 1 {
		t.Errorf("all muted: %+v", s)
	}
}

// A digest's id is deterministic per recipient and due time, names its
// due time, and is never a version row's.
// Rules: R-DIGEST-1.
func TestDigestID_PerRecipientAndPeriod(t *testing.T) {
	due := time.Date(2026, 6, 10, 9, 0, 0, 0, time.UTC)
	a := delivery.DigestID("Ann@Example.com ", due)
	if a != delivery.DigestID("ann@example.com", due) || a == delivery.DigestID("bob@example.com", due) || a == delivery.DigestID("ann@example.com", due.Add(time.Hour)) {
		t.Errorf("digest ids: %s", a)
	}
	if got, ok := delivery.DigestDue(a); !ok || !got.Equal(due) {
		t.Errorf("DigestDue(%s) = %s, %t", a, got, ok)
	}
	if _, ok := delivery.DigestDue(delivery.ID("generic:x", "ann@example.com", 1)); ok {
		t.Error("a version row's id read as a digest's")
	}
	const want = "g_1781082000_"
	if a[:len(want)] != want || len(a) != len(want)+32 {
		t.Errorf("id %s: want %s and 32 characters", a, want)
	}
}

// The digest's statuses are stored: their values never change. A
// digested version row and a digest settled empty are terminal and never
// claimed; an open digest is neither terminal nor claimable (notify
// closes it first).
// Rules: R-DIGEST-1, R-DIGEST-2.
func TestDigestStatuses_StoredValuesNeverChange(t *testing.T) {
	want := map[delivery.Status]string{delivery.StatusDigested: "digested", delivery.StatusOpen: "open", delivery.StatusSkippedEmpty: "skipped_empty"}
	for _, s := range delivery.DigestStatuses() {
		if string(s) != want[s] {
			t.Errorf("status %q; want %q", s, want[s])
		}
	}
	now := time.Now()
	for _, s := range []delivery.Status{delivery.StatusDigested, delivery.StatusSkippedEmpty} {
		r := delivery.Row{Status: s}
		if !s.Done() || s.Claimable() || delivery.Decide(r, now) != delivery.Skip || r.Unsent() {
			t.Errorf("%s: want terminal, never claimed", s)
		}
	}
	if open := (delivery.Row{Status: delivery.StatusOpen}); delivery.StatusOpen.Done() || delivery.StatusOpen.Claimable() || delivery.Decide(open, now) == delivery.Claim {
		t.Error("open: want neither terminal nor claimable")
	}
	if delivery.Summarize([]delivery.Row{{Status: delivery.StatusDigested}, {Status: delivery.StatusSent}}) != delivery.Complete {
		t.Error("a digested row must count as settled for its job (R-OUTBOX-8)")
	}
}
