package critic

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// SameKey is the identity a reader's "wrong" keeps for a finding
// (R-VOTE-3): its file, its rule, the text of the line it flags, white
// space aside (Anchor), and where that line stands among the lines
// around it (Place). Neither the model's words nor the line's number are
// part of it, so the key survives a reworded message and lines inserted
// above (away from the line's nearest neighbours); it changes when the
// line's text does, or its neighbours do. A line with the same text
// elsewhere in the file has another Place, so another key: a mark never
// hides it.
//
// A finding without an Anchor or a Place has no key (""): a whole-file
// finding, one of a critique made without Incremental (no line text was
// recorded), or one on a line its neighbours cannot tell from a copy.
// There is nothing to follow such a finding by, so no mark is kept for
// it and nothing is hidden; a line number alone would hide whatever code
// comes to stand at that number.
//
// Unlike compare it knows no critic, so a whole-change rule's finding is
// keyed by where it is attached like any other, and there is no looser
// match on a renamed rule: a reader who marked a finding wrong marked it
// under its rule. The key is a digest (hex, 32 characters), so what it is
// made of (a file name) is not spelled out where it is stored. Its domain
// ("same-place") differs from the keys kept before Place existed (file,
// rule and Anchor, or the line number, under "same-finding"), so a mark
// kept then matches no finding now: it is read as before and hides
// nothing.
func SameKey(f Finding) string {
	if f.Anchor == "" || f.Place == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("same-place\x00" + f.File + "\x00" + f.Rule + "\x00" + f.Anchor + "\x00" + f.Place))
	return hex.EncodeToString(sum[:16])
}

// Hide removes from a critique to be mailed the findings hide picks, and
// recounts its comparison's new and unchanged findings, as DropBelow does;
// resolved findings are kept (a fixed problem is news whoever doubted
// it). It returns how many it removed. The summary is left alone: the
// email says what was hidden, in words of its own (R-VOTE-3).
func Hide(c Critique, hide func(Finding) bool) (Critique, int) {
	kept := slices.DeleteFunc(slices.Clone(c.Findings), hide)
	hidden := len(c.Findings) - len(kept)
	if hidden == 0 {
		return c, 0
	}
	c.Findings = kept
	if ch := c.Changes; ch != nil {
		cp := *ch
		cp.New, cp.Unchanged = 0, 0
		for _, f := range kept {
			if f.New {
				cp.New++
			} else {
				cp.Unchanged++
			}
		}
		c.Changes = &cp
	}
	return c, hidden
}
