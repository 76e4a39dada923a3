package critic

// SameFindings reports whether two critiques report the same findings:
// one to one, each on the same file and flagged line (its Anchor, or its
// number when a review set none) under the same rule, whatever the words.
// An operator's rerun of a diff whose review is the same as the one it
// repeats has nothing new to say (R-QUIET-2).
func SameFindings(a, b Critique) bool {
	if len(a.Findings) != len(b.Findings) {
		return false
	}
	type key struct {
		file, anchor, rule string
		line               int
	}
	keyOf := func(f Finding) key {
		k := key{file: f.File, anchor: f.Anchor, rule: f.Rule}
		if f.Anchor == "" {
			k.line = f.Line
		}
		return k
	}
	left := map[key]int{}
	for _, f := range a.Findings {
		left[keyOf(f)]++
	}
	for _, f := range b.Findings {
		k := keyOf(f)
		if left[k] == 0 {
			return false
		}
		left[k]--
	}
	return true
}
