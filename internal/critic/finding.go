package critic

import (
	"cmp"
	"slices"
)

// Severity ranks how much a finding should worry the reviewer.
type Severity string

// The severities, from most to least serious.
const (
	// SeverityError is for something that must not be merged as is,
	// e.g. a leaked credential or a merge-conflict marker.
	SeverityError Severity = "error"
	// SeverityWarning is for something a reviewer should look at.
	SeverityWarning Severity = "warning"
	// SeverityInfo is for a remark that may well be intended.
	SeverityInfo Severity = "info"
)

// rank orders severities so that capping keeps the most serious findings.
func (s Severity) rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	default:
		return 0
	}
}

// Finding is one remark about the change.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line"` // line in the new file; 0 when the finding is about the whole file
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"` // stable id, e.g. "todo-added"
	Message  string   `json:"message"`
	// Anchor identifies the flagged line across versions: a hash of its
	// text with the white space collapsed (empty for a whole-file
	// finding). Set by Incremental; see sameFinding.
	Anchor string `json:"anchor,omitempty"`
	// Place says where the flagged line stands among the lines around
	// it: a digest of its nearest non-blank neighbours in the new file,
	// as few as tell it from any other line with the same text in the
	// file's diff (place.go). Empty when the line has no Anchor, or its
	// neighbours cannot tell it from a copy. Set by Incremental; with
	// Anchor and Rule it is what a reader's "wrong" hides (SameKey,
	// R-VOTE-3). A digest, 16 hex characters: no source is kept.
	Place string `json:"place,omitempty"`
	// New: not reported by the previous reviewed version. Meaningful only
	// in a critique with Changes.
	New bool `json:"new,omitempty"`
	// Excerpt is the diff's code at the flagged line, set by the llm stage
	// (Excerpts) and shown under the finding in the email (R-MAIL-5);
	// zero for a whole-file finding.
	Excerpt Excerpt `json:"excerpt,omitzero"`
}

// compareFindings is the presentation order: by file, line and rule, with
// severity and message as tie-breakers so the order is total and therefore
// deterministic.
func compareFindings(a, b Finding) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(b.Severity.rank(), a.Severity.rank()),
		cmp.Compare(a.Message, b.Message),
	)
}

// compareImportance puts the findings most worth keeping first.
func compareImportance(a, b Finding) int {
	return cmp.Or(cmp.Compare(b.Severity.rank(), a.Severity.rank()), compareFindings(a, b))
}

// finalize deduplicates, caps at max (keeping the most severe) and sorts
// findings for presentation. It reports whether any were dropped by the cap.
func finalize(fs []Finding, max int) ([]Finding, bool) {
	slices.SortFunc(fs, compareFindings)
	fs = slices.Compact(fs)
	truncated := false
	if len(fs) > max {
		slices.SortFunc(fs, compareImportance)
		fs = fs[:max]
		slices.SortFunc(fs, compareFindings)
		truncated = true
	}
	if fs == nil {
		fs = []Finding{} // encode as [] rather than null
	}
	return fs, truncated
}

// severityCounts tallies findings by severity for the summary.
type severityCounts struct {
	errors, warnings, infos int
}

func countSeverities(fs []Finding) severityCounts {
	var c severityCounts
	for _, f := range fs {
		switch f.Severity {
		case SeverityError:
			c.errors++
		case SeverityWarning:
			c.warnings++
		default:
			c.infos++
		}
	}
	return c
}

func (c severityCounts) total() int { return c.errors + c.warnings + c.infos }
