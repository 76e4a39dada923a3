package vote

import (
	"time"
)

// A reader who marks a finding wrong is not shown it again in later
// versions of the same changelist while its line is unchanged (R-VOTE-3).
// What is kept for that is a reader's Marks on a changelist: one mark per
// finding they voted on, keyed by the finding's identity across versions
// (critic.SameKey: file, rule, the flagged line's text and where it stands
// among its neighbours), not by the vote's FindingID, which names the
// finding in one email (its line number and the model's words). A key is a
// fixed-size digest: a mark keeps no source and no address.

// MaxMarks bounds the marks kept for one reader on one changelist: a
// reader (or a forwarded email) voting on every finding of every version
// cannot grow the item without end. A wrong past it is not kept (MarkFull,
// counted); a mark for a finding voted useful again is dropped first.
const MaxMarks = 200

// Mark is a reader's latest choice on one finding of a changelist, and
// when it was made.
type Mark struct {
	Choice Choice    `json:"c"`
	At     time.Time `json:"at"`
}

// Marks are one reader's marks on one changelist's findings, by
// critic.SameKey.
type Marks map[string]Mark

// Dismissed reports whether the finding of key is marked wrong.
func (m Marks) Dismissed(key string) bool {
	mk, ok := m[key]
	return ok && mk.Choice == Wrong
}

// MarkOutcome is what applying a choice did to a reader's marks.
type MarkOutcome string

const (
	// MarkDismissed: a wrong, newly kept; the finding is hidden from now.
	MarkDismissed MarkOutcome = "dismissed"
	// MarkRestored: a useful replaced a wrong; the finding shows again.
	MarkRestored MarkOutcome = "restored"
	// MarkUnchanged: the same choice again, or a useful on a finding never
	// marked wrong; nothing to keep.
	MarkUnchanged MarkOutcome = "unchanged"
	// MarkStale: a choice made before the one kept (a request that came
	// late); the later choice stands.
	MarkStale MarkOutcome = "stale"
	// MarkFull: a wrong on a new finding with MaxMarks kept already; not
	// kept, the finding still shows.
	MarkFull MarkOutcome = "full"
	// MarkUnplaced: a choice on a finding with no place to follow
	// (critic.SameKey is empty: a whole-file finding, a review that kept
	// no line text, a line its neighbours cannot tell from a copy); not
	// kept, nothing is hidden.
	MarkUnplaced MarkOutcome = "unplaced"
)

// Changed reports whether o changed the marks (they must be written).
func (o MarkOutcome) Changed() bool { return o == MarkDismissed || o == MarkRestored }

// Apply records choice c on the finding of key, made at at, and returns
// the marks as they are now and what it did. The latest choice wins, by
// when it was made, so two clicks whose requests cross (useful, then
// wrong, arriving in the other order) leave the one made last; a useful
// over a wrong is kept as a mark of its own for that reason. A useful on
// a finding with no mark keeps nothing. m is not modified.
func (m Marks) Apply(key string, c Choice, at time.Time) (Marks, MarkOutcome) {
	at = at.UTC()
	prev, had := m[key]
	switch {
	case had && prev.At.After(at):
		return m, MarkStale
	case had && prev.Choice == c, !had && c != Wrong:
		return m, MarkUnchanged
	}
	out := make(Marks, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	if !had && len(out) >= MaxMarks && !out.dropOldestUseful() {
		return m, MarkFull
	}
	out[key] = Mark{Choice: c, At: at}
	if c == Wrong {
		return out, MarkDismissed
	}
	return out, MarkRestored
}

// dropOldestUseful makes room by forgetting the oldest useful mark (its
// only use is to outrank a late wrong); false when every mark is a wrong.
func (m Marks) dropOldestUseful() bool {
	oldest, found := "", false
	for k, v := range m {
		if v.Choice == Useful && (!found || v.At.Before(m[oldest].At) || (v.At.Equal(m[oldest].At) && k < oldest)) {
			oldest, found = k, true
		}
	}
	if found {
		delete(m, oldest)
	}
	return found
}
