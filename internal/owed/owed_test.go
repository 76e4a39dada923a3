package owed

import (
	"slices"
	"strings"
	"testing"
)

const ana, bo = "ana@example.com", "bo@example.com"

// heads are a change's heads in the code host's order, each arrived at
// the step given, all read by ana and bo, each its own diff.
func heads(arrived ...int) []Head {
	var out []Head
	for i, at := range arrived {
		n := "v" + string(rune('1'+i))
		out = append(out, Head{Name: n, Arrived: at, Diff: "d" + n, Readers: []string{ana, bo}})
	}
	return out
}

func change(hs []Head) Change { return Change{ID: "cl1", Author: "cy", Heads: hs} }

// What each reader is owed: the newest head in the code host's order that
// can reach them, never a stale one, never one after their mute, nothing
// of a change the trusted settings skip; SES's verdicts decide what can
// reach them.
// Rules: R-OWED-1, R-SOURCE-6, R-QUIET-3, R-QUIET-4, R-REPO-7, R-REPLY-7.
func TestCompute_WhatEachReaderIsOwed(t *testing.T) {
	burst := func(c Change) Change { c.Burst = true; return c }
	for _, tc := range []struct {
		name  string
		w     World
		owed  string // ana's owed head ("" none)
		never []string
	}{
		{name: "in order", w: World{Changes: []Change{change(heads(0, 1, 2))}}, owed: "v3"},
		// X3, then X5, then X4 late: X4 is stale, X5 owed.
		{name: "late and out of order", w: World{Changes: []Change{change(heads(0, 2, 1))}}, owed: "v3", never: []string{"v2"}},
		// Two pushes handled at once: neither is stale, the newer owed.
		{name: "two pushes at once", w: World{Changes: []Change{change(heads(0, 1, 1))}}, owed: "v3"},
		// At once, the newer drawing first: the older answered stale,
		// never mailed; the newer rejected for ana, nothing is owed her.
		{name: "two pushes at once, the older lost the race", w: World{Changes: []Change{func() Change {
			c := change(heads(0, 0))
			c.Heads[0].LostRace = true
			return c
		}()}, Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, owed: "", never: []string{"v1"}},
		// At once, the older drawing first: a version; the newer
		// rejected for ana, the older is owed her (R-QUIET-4).
		{name: "two pushes at once, the older versioned", w: World{Changes: []Change{change(heads(0, 0))},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, owed: "v1", never: []string{}},
		// The newer one's webhook sent first but answered after the
		// older one was sent: they raced; the older, versioned, is owed
		// once the newer is rejected.
		{name: "sent while the newer was unanswered", w: World{Changes: []Change{func() Change {
			c := change(heads(2, 0))
			c.Heads[1].Took = 3
			return c
		}()}, Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, owed: "v1"},
		// A stale answer to a head that raced nothing is not believed:
		// arriving first, it is owed.
		{name: "a stale answer without a race", w: World{Changes: []Change{func() Change {
			c := change(heads(0, 5))
			c.Heads[0].LostRace = true
			return c
		}()}, Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, owed: "v1"},
		// A force-push is a head after the old one: owed.
		{name: "force-push", w: World{Changes: []Change{change(heads(0, 1))}}, owed: "v2"},
		{name: "burst: the newest only", w: World{Changes: []Change{burst(change(heads(0, 0, 0)))}}, owed: "v3", never: []string{"v2", "v1"}},
		{name: "newest rejected after its Send: the one below", w: World{Changes: []Change{burst(change(heads(0, 0)))},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, owed: "v1"},
		{name: "newest refused at the send: the one below", w: World{Changes: []Change{change(heads(0, 1))},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Refused}}, owed: "v1"},
		{name: "newest bounced for good: nothing more", w: World{Changes: []Change{change(heads(0, 1))},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Bounced}}, owed: ""},
		{name: "complained: it reached them", w: World{Changes: []Change{change(heads(0, 1))},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Complained}}, owed: "v2"},
		{name: "newest failed (budget): the one below", w: World{Changes: []Change{func() Change {
			c := burst(change(heads(0, 0)))
			c.Heads[1].Failed = true
			return c
		}()}}, owed: "v1", never: []string{}},
		{name: "muted before", w: World{Changes: []Change{change(heads(0, 1))}, Readers: map[string]Reader{ana: {Muted: []string{"cl1"}}}},
			never: []string{"v1", "v2"}},
		{name: "suppressed", w: World{Changes: []Change{change(heads(0))}, Readers: map[string]Reader{ana: {Suppressed: true}}}, never: []string{"v1"}},
		{name: "muted by reply between the pushes", w: World{Changes: []Change{change(heads(0, 2))},
			Replies: []Reply{{Step: 1, To: ana, From: []string{ana}, Judged: ana, MessageID: "<m1@x>", SESID: "s1", Mute: "cl1"}}},
			owed: "v1", never: []string{"v2"}},
		{name: "a forged mute mutes nothing", w: World{Changes: []Change{change(heads(0, 2))},
			Replies: []Reply{{Step: 1, To: ana, From: []string{ana, "eve@example.com"}, Judged: ana, MessageID: "<m1@x>", SESID: "s1", Mute: "cl1"}}},
			owed: "v2"},
		{name: "trusted settings skip the author", w: World{Changes: []Change{func() Change {
			c := change(heads(0))
			c.Trusted.SkipAuthors = []string{"cy"}
			return c
		}()}}, never: []string{"v1"}},
		// A stacked Gerrit change: its parent, unmerged, skips the
		// author; the branch tip does not. The child is owed.
		{name: "stacked change: the parent's settings decide nothing", w: World{Changes: []Change{func() Change {
			c := change(heads(0))
			c.Proposed.SkipAuthors = []string{"cy"}
			return c
		}()}}, owed: "v1"},
		{name: "a label the author set skips nothing", w: World{Changes: []Change{func() Change {
			c := change(heads(0))
			c.Trusted.SkipLabels = []string{"wip"}
			c.Labels = []Label{{Name: "wip", ByAuthor: true}}
			return c
		}()}}, owed: "v1"},
		{name: "a label a maintainer set skips", w: World{Changes: []Change{func() Change {
			c := change(heads(0))
			c.Trusted.SkipLabels = []string{"wip"}
			c.Labels = []Label{{Name: "wip"}}
			return c
		}()}}, never: []string{"v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Compute(tc.w).Due("cl1", ana)
			if !ok {
				t.Fatal("no due for ana")
			}
			if got := strings.Join(d.Heads, ","); got != tc.owed {
				t.Errorf("owed %q (%s), want %q", got, d.Why, tc.owed)
			}
			if tc.never != nil && !sameSet(d.Never, tc.never) {
				t.Errorf("never %v, want %v", d.Never, tc.never)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A reply is acted on once per (sender, Message-ID), however often it is
// received; one without a Message-ID by SES's id; one with two From
// fields, a Sender not its From, or a From SES did not judge, never.
// Rules: R-OWED-1, R-REPLY-2, R-REPLY-8.
func TestCompute_RepliesActedOnOnceFromTheFromSESJudged(t *testing.T) {
	ok := Reply{To: ana, From: []string{ana}, Judged: ana, MessageID: "<m1@x>", SESID: "s1"}
	again := ok
	again.SESID = "s2"
	bare := Reply{To: ana, From: []string{ana}, Judged: ana, SESID: "s3"}
	bareAgain := bare
	bareAgain.SESID = "s4"
	twoFroms := Reply{To: ana, From: []string{ana, "eve@example.com"}, Judged: ana, MessageID: "<m2@x>", SESID: "s5"}
	sender := Reply{To: ana, From: []string{ana}, Sender: "eve@example.com", Judged: ana, MessageID: "<m3@x>", SESID: "s6"}
	unjudged := Reply{To: ana, From: []string{ana}, Judged: "eve@example.com", MessageID: "<m4@x>", SESID: "s7"}
	other := Reply{To: ana, From: []string{"eve@example.com"}, Judged: "eve@example.com", MessageID: "<m5@x>", SESID: "s8"}
	a := Compute(World{Replies: []Reply{ok, again, bare, bareAgain, twoFroms, sender, unjudged, other}})
	var acted []string
	for _, r := range a.Replies {
		if r.Act {
			acted = append(acted, r.Key)
		}
	}
	want := []string{ana + " <m1@x>", "ses:s3", "ses:s4"}
	if !slices.Equal(acted, want) {
		t.Errorf("acted on %v, want %v", acted, want)
	}
	if f := Check(World{}, a, nil, map[string]int{ana + " <m1@x>": 1, "ses:s3": 1, "ses:s4": 1}); !f.OK() {
		t.Errorf("one confirmation per key: %s", f)
	}
	f := Check(World{}, a, nil, map[string]int{ana + " <m1@x>": 2, "ses:s3": 1, "ses:s4": 1, ana + " <m2@x>": 1})
	if len(f.Wrong) != 2 || len(f.Lost) != 0 {
		t.Errorf("twice confirmed and a forgery acted on: %s, want two wrong", f)
	}
}

// Check: owed and not delivered is lost; delivered and not owed (a stale
// head, a second version of a burst, a second copy) is wrong; an earlier
// head with the owed head's diff, or the same findings as the reader sees
// them, is the owed content.
// Rules: R-OWED-1, R-QUIET-1, R-QUIET-2, R-OUTBOX-10.
func TestCheck_LostAndWrong(t *testing.T) {
	outOfOrder := World{Changes: []Change{change(heads(0, 2, 1))}}
	same := change(heads(0, 1))
	same.Heads[1].Diff = same.Heads[0].Diff
	sev := change(heads(0, 1))
	sev.Heads[0].Findings = []Finding{{Key: "a", Severity: 3}}
	sev.Heads[1].Findings = []Finding{{Key: "a", Severity: 3}, {Key: "b", Severity: 1}}
	for _, tc := range []struct {
		name        string
		w           World
		got         []Mail
		lost, wrong int
	}{
		{name: "the newest reached both", w: outOfOrder, got: []Mail{{"cl1", "v3", ana}, {"cl1", "v3", bo}}},
		{name: "v1 then the newest: not a burst", w: outOfOrder, got: []Mail{{"cl1", "v1", ana}, {"cl1", "v3", ana}, {"cl1", "v3", bo}}},
		{name: "the stale head mailed", w: outOfOrder, got: []Mail{{"cl1", "v2", ana}, {"cl1", "v3", ana}, {"cl1", "v3", bo}}, wrong: 1},
		{name: "the newest never reached bo", w: outOfOrder, got: []Mail{{"cl1", "v3", ana}}, lost: 1},
		{name: "twice", w: outOfOrder, got: []Mail{{"cl1", "v3", ana}, {"cl1", "v3", ana}, {"cl1", "v3", bo}}, wrong: 1},
		{name: "a burst mailed twice", w: World{Changes: []Change{func() Change { c := change(heads(0, 0)); c.Burst = true; return c }()}},
			got: []Mail{{"cl1", "v1", ana}, {"cl1", "v2", ana}, {"cl1", "v2", bo}}, wrong: 1},
		{name: "same diff: v1 is v2's content", w: World{Changes: []Change{same}}, got: []Mail{{"cl1", "v1", ana}, {"cl1", "v1", bo}}},
		{name: "nothing new above bo's minimum", w: World{Changes: []Change{sev}, Readers: map[string]Reader{bo: {MinSeverity: 2}}},
			got: []Mail{{"cl1", "v1", ana}, {"cl1", "v2", ana}, {"cl1", "v1", bo}}},
		{name: "nothing new but what ana dismissed", w: World{Changes: []Change{sev}, Readers: map[string]Reader{ana: {Dismissed: []string{"b"}}}},
			got: []Mail{{"cl1", "v1", ana}, {"cl1", "v1", bo}, {"cl1", "v2", bo}}},
		{name: "something new for ana", w: World{Changes: []Change{sev}, Readers: map[string]Reader{bo: {MinSeverity: 2}}},
			got: []Mail{{"cl1", "v1", ana}, {"cl1", "v1", bo}}, lost: 1},
		{name: "a rejected newest: the one below reached", w: World{Changes: []Change{func() Change { c := change(heads(0, 0)); c.Burst = true; return c }()},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, got: []Mail{{"cl1", "v1", ana}, {"cl1", "v2", bo}}},
		{name: "a rejected newest: nothing reached", w: World{Changes: []Change{func() Change { c := change(heads(0, 0)); c.Burst = true; return c }()},
			Verdicts: map[Mail]Verdict{{"cl1", "v2", ana}: Rejected}}, got: []Mail{{"cl1", "v2", bo}}, lost: 1},
		{name: "an explicit change owes every head", w: World{Changes: []Change{func() Change { c := change(heads(0, 1)); c.Explicit = true; return c }()}},
			got: []Mail{{"cl1", "v2", ana}, {"cl1", "v1", bo}, {"cl1", "v2", bo}}, lost: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Check(tc.w, Compute(tc.w), tc.got, nil)
			if len(f.Lost) != tc.lost || len(f.Wrong) != tc.wrong {
				t.Errorf("lost %d, wrong %d (%s), want %d, %d", len(f.Lost), len(f.Wrong), f, tc.lost, tc.wrong)
			}
		})
	}
}
