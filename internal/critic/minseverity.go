package critic

import (
	"fmt"
	"slices"
	"strings"
)

// ParseSeverity reads a minimum severity as configured ("info", "warning",
// "error", any case); "" is none.
func ParseSeverity(s string) (Severity, error) {
	switch v := Severity(strings.ToLower(strings.TrimSpace(s))); v {
	case "", SeverityInfo, SeverityWarning, SeverityError:
		return v, nil
	}
	return "", fmt.Errorf("severity %q: want info, warning or error", s)
}

// Higher is the more serious of two minimum severities: a repository's
// min_severity can raise the deployment's, never lower it (R-REPO-5).
func Higher(a, b Severity) Severity {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// DropBelow removes the findings below min from a critique to be mailed,
// and the resolved findings below it from its comparison, counts
// recomputed, and says in the summary how many were left out: "2 findings
// below warning not shown." (R-REPO-5). It returns how many findings it
// dropped; the stored critique keeps them all.
func DropBelow(c Critique, min Severity) (Critique, int) {
	c, dropped := LeaveOutBelow(c, min)
	if dropped > 0 {
		c.Summary = strings.TrimSpace(c.Summary + " " + plural(dropped, "finding", "findings") + " below " + string(min) + " not shown.")
	}
	return c, dropped
}

// LeaveOutBelow is DropBelow without the summary's note: a recipient's own
// minimum (R-PREF-3), which the email states in text of its own.
func LeaveOutBelow(c Critique, min Severity) (Critique, int) {
	if min.rank() <= 0 {
		return c, 0
	}
	return leaveOut(c, func(f Finding) bool { return f.Severity.rank() < min.rank() })
}

// leaveOut removes the findings out reports from a critique, and from its
// comparison's resolved ones, the counts recomputed. It returns how many
// findings it removed.
func leaveOut(c Critique, out func(Finding) bool) (Critique, int) {
	kept := slices.DeleteFunc(slices.Clone(c.Findings), out)
	dropped := len(c.Findings) - len(kept)
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
		resolved := slices.DeleteFunc(slices.Clone(cp.Resolved), out)
		cp.ResolvedCount -= len(cp.Resolved) - len(resolved)
		cp.Resolved = resolved
		c.Changes = &cp
	}
	return c, dropped
}
