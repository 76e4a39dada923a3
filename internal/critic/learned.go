package critic

import "slices"

// LeaveOutLearned removes from a critique the findings of the rules a
// team's accepted learnings name (R-LEARN-2), whatever critic made them,
// and from its comparison the resolved findings of those rules (the rule
// was left out, nothing was fixed), counts recomputed. It records how
// many it removed in LearnedOut, which every email of the version states.
//
// An error-severity finding is never left out: error is the top
// severity, so every deployment, repository and reader minimum lets it
// through (R-REPO-5, R-PREF-3), and a team's votes cannot lower what the
// deployment's minimum shows.
func LeaveOutLearned(c Critique, rules []string) Critique {
	if len(rules) == 0 {
		return c
	}
	c, n := leaveOut(c, func(f Finding) bool {
		return f.Severity != SeverityError && slices.Contains(rules, f.Rule)
	})
	c.LearnedOut += n
	return c
}
