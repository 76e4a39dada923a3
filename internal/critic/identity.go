package critic

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// SameKey is a finding's identity across the versions of a changelist, as
// the comparison of versions sees it (compare's keyOf): its file, its rule
// and the text of the line it flags, white space aside (Anchor). Neither
// the model's words nor the line's number are part of it, so the key
// survives a reworded message and lines inserted above; it changes when
// the flagged line's text does. A finding without an Anchor (a whole-file
// finding, or a critique made without Incremental) is keyed by its line
// number instead, as SameFindings keys it.
//
// Unlike compare it knows no critic, so a whole-change rule's finding is
// keyed by where it is attached like any other, and there is no looser
// match on a renamed rule: a reader who marked a finding wrong marked it
// under its rule. The key is a digest (hex, 32 characters), so what it is
// made of (a file name) is not spelled out where it is stored.
func SameKey(f Finding) string {
	at := "anchor:" + f.Anchor
	if f.Anchor == "" {
		at = "line:" + strconv.Itoa(f.Line)
	}
	sum := sha256.Sum256([]byte("same-finding\x00" + f.File + "\x00" + f.Rule + "\x00" + at))
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
