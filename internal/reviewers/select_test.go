package reviewers

import (
	"reflect"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/testseed"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func names(ps []Person) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Username)
	}
	return out
}

// Who gets a later version: the requested reviewers, those who already
// reviewed, minus those removed after their review, minus the author.
// Rules: R-REVIEWERS-2.
func TestSelect_RequestedPlusReviewedMinusRemovedMinusAuthor(t *testing.T) {
	r := Roster{}
	for _, ev := range []Event{
		{"carol", Reviewed, at(1)},  // reviewed, then asked again and taken off: off
		{"carol", Requested, at(2)}, //
		{"carol", Removed, at(3)},   //
		{"dave", Removed, at(1)},    // removed, then reviewed anyway: on
		{"dave", Reviewed, at(2)},   //
		{"erin", Reviewed, at(5)},   // a review the webhook told of: on
		{"frank", Removed, at(9)},   // removed, but asked again now (the system lists him): on
	} {
		r.Apply(ev)
	}
	got := Select(Asked{
		Requested: []Person{{Username: "alice"}, {Username: "Frank"}, {Username: "Codertocat"}, {Email: "gerrit-only@example.com"}},
		Reviewed:  []Person{{Username: "bob", Reviewed: at(0)}, {Username: "carol", Reviewed: at(1)}, {Username: "dave", Reviewed: at(0)}, {Username: "codertocat", Reviewed: at(4)}},
		Author:    "CoderTocat",
	}, r)
	want := []string{"alice", "Frank", "", "bob", "dave", "erin"}
	if !reflect.DeepEqual(names(got), want) {
		t.Fatalf("selected %v, want %v", names(got), want)
	}
	if got[2].Email != "gerrit-only@example.com" {
		t.Fatalf("a person named by address only was lost: %+v", got[2])
	}
}

// A removed reviewer who never reviewed is off; one who reviewed after
// the removal is on; the system asking again wins over an old removal.
// Rules: R-REVIEWERS-2.
func TestSelect_RemovalAgainstReviewTimes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []Event
		asked  Asked
		want   []string
	}{
		{"removed, never reviewed", []Event{{"u", Requested, at(0)}, {"u", Removed, at(1)}}, Asked{}, []string{}},
		{"reviewed (API) then removed", []Event{{"u", Removed, at(2)}}, Asked{Reviewed: []Person{{Username: "u", Reviewed: at(1)}}}, []string{}},
		{"removed then reviewed (API)", []Event{{"u", Removed, at(1)}}, Asked{Reviewed: []Person{{Username: "u", Reviewed: at(2)}}}, []string{"u"}},
		{"removed, asked again", []Event{{"u", Removed, at(5)}}, Asked{Requested: []Person{{Username: "U"}}}, []string{"U"}},
		{"author reviewed their own", nil, Asked{Author: "u", Reviewed: []Person{{Username: "u", Reviewed: at(1)}}}, []string{}},
	} {
		r := Roster{}
		for _, ev := range tt.events {
			r.Apply(ev)
		}
		if got := names(Select(tt.asked, r)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Webhooks arrive late, twice and out of order: any order of the same
// events, with repeats, merges to the same roster.
// Rules: R-REVIEWERS-2.
func TestRoster_MergeIsOrderFreeAndIdempotent(t *testing.T) {
	events := []Event{
		{"a", Requested, at(1)}, {"a", Reviewed, at(2)}, {"a", Removed, at(3)}, {"A", Requested, at(4)},
		{"b", Removed, at(1)}, {"b", Reviewed, at(5)}, {"c", Requested, at(2)}, {"c", Requested, at(1)},
		{"", Requested, at(1)}, {"d", Requested, time.Time{}}, {"e", "liked", at(1)},
	}
	want := Roster{}
	for _, ev := range events {
		want.Apply(ev)
	}
	if len(want) != 3 {
		t.Fatalf("roster %v: events without a name, a time or a known kind were kept", want)
	}
	rnd := testseed.Rand(t, 1)
	for range 200 {
		evs := append([]Event(nil), events...)
		evs = append(evs, evs[rnd.IntN(len(evs))], evs[rnd.IntN(len(evs))])
		rnd.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		got := Roster{}
		for _, ev := range evs {
			got.Apply(ev)
		}
		for k, m := range want {
			g := got[k]
			if !g.Requested.Equal(m.Requested) || !g.Reviewed.Equal(m.Reviewed) || !g.Removed.Equal(m.Removed) {
				t.Fatalf("order %v: %s = %+v, want %+v", evs, k, g, m)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("order %v: %d reviewers, want %d", evs, len(got), len(want))
		}
	}
	if want.Apply(Event{"a", Removed, at(3)}) {
		t.Fatal("applying an event twice changed the roster")
	}
}
