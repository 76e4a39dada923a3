package critic

import "slices"

// MaxResolvedListed bounds the resolved findings a critique lists: an email
// that reports dozens of fixed problems buries the new ones.
const MaxResolvedListed = 20

// Changes is how a version's findings compare with those of the previous
// reviewed version.
type Changes struct {
	// Since is the version compared with.
	Since int `json:"since"`
	// Reviewed is how many files of the diff the critic was sent; Carried
	// how many kept the findings of version Since without a review,
	// because their change is the same.
	Reviewed int `json:"reviewed"`
	Carried  int `json:"carried"`
	// New and Unchanged count the critique's findings (Finding.New tells
	// which is which).
	New       int `json:"new"`
	Unchanged int `json:"unchanged"`
	// Resolved are findings of version Since that this version no longer
	// reports, on a file reviewed now or no longer in the diff: the most
	// severe MaxResolvedListed, with the lines they had then.
	// ResolvedCount counts them all.
	Resolved      []Finding `json:"resolved,omitempty"`
	ResolvedCount int       `json:"resolved_count,omitempty"`
}

// findingKey is a finding's identity across versions. A model rewords its
// message from one review to the next and an edit above a line moves it,
// so neither the message nor the line number is part of it: a finding is
// the same when it is on the same file, on a line with the same text
// (Anchor), under the same rule. A finding of a rule that judges the
// change as a whole is the same as any other of that rule, wherever it is
// attached.
type findingKey struct {
	file, anchor, rule, place string
}

func keyOf(f Finding, whole map[string]bool) findingKey {
	if whole[f.Rule] {
		return findingKey{rule: f.Rule}
	}
	return findingKey{file: f.File, anchor: f.Anchor, rule: f.Rule}
}

// placedKey is keyOf and the flagged line's Place: paired first, so that
// of two findings on lines with the same text the one at the earlier
// finding's place is the one called unchanged, and a copy of the line
// added elsewhere is the new one (R-VOTE-3 hides by place; an email that
// called the copy unchanged and the dismissed one new would mislead its
// reader and R-QUIET-2 alike). None without a Place.
func placedKey(f Finding, whole map[string]bool) (findingKey, bool) {
	if whole[f.Rule] || f.Place == "" {
		return findingKey{}, false
	}
	return findingKey{file: f.File, anchor: f.Anchor, rule: f.Rule, place: f.Place}, true
}

// looseKey matches what keyOf left over when a model renamed the rule of a
// finding on the same line: the same file and flagged line, any rule. A
// whole-file finding (no line text) has none.
func looseKey(f Finding, whole map[string]bool) (findingKey, bool) {
	if whole[f.Rule] || f.Anchor == "" {
		return findingKey{}, false
	}
	return findingKey{file: f.File, anchor: f.Anchor}, true
}

// compare marks each of cur New or not against prev's findings and lists
// what prev reported that cur does not. Matching is one to one (two
// findings on two lines with the same text are two), by placedKey first,
// then by keyOf, then by looseKey. A finding of prev left unmatched is resolved when it is of
// a whole-change rule or resolves says so (resolvedBy: the lines it
// flagged changed, R-LEDGER-2); the others are returned: still open,
// though not reported now.
func compare(prev *Previous, cur []Finding, whole map[string]bool, resolves func(Finding) bool) (*Changes, []Finding) {
	ch := &Changes{Since: prev.Version}
	old := prev.Critique.Findings
	matched := make([]bool, len(old))
	pair := func(key func(Finding) (findingKey, bool)) {
		free := map[findingKey][]int{}
		for i, f := range old {
			if k, ok := key(f); ok && !matched[i] {
				free[k] = append(free[k], i)
			}
		}
		for i := range cur {
			if !cur[i].New {
				continue
			}
			k, ok := key(cur[i])
			if !ok || len(free[k]) == 0 {
				continue
			}
			matched[free[k][0]] = true
			free[k] = free[k][1:]
			cur[i].New = false
		}
	}
	for i := range cur {
		cur[i].New = true
	}
	pair(func(f Finding) (findingKey, bool) { return placedKey(f, whole) })
	pair(func(f Finding) (findingKey, bool) { return keyOf(f, whole), true })
	pair(func(f Finding) (findingKey, bool) { return looseKey(f, whole) })
	for _, f := range cur {
		if f.New {
			ch.New++
		} else {
			ch.Unchanged++
		}
	}
	var resolved, open []Finding
	for i, f := range old {
		if matched[i] {
			continue
		}
		if !(whole[f.Rule] || resolves(f)) {
			open = append(open, f)
			continue
		}
		f.New, f.Anchor, f.Place = false, "", ""
		resolved = append(resolved, f)
	}
	ch.ResolvedCount = len(resolved)
	slices.SortFunc(resolved, compareImportance)
	if len(resolved) > MaxResolvedListed {
		resolved = resolved[:MaxResolvedListed]
	}
	slices.SortFunc(resolved, compareFindings)
	ch.Resolved = resolved
	return ch, open
}
