package critic

import "strings"

// checkMergeConflict flags conflict markers left behind by a botched merge
// or rebase. The file will not compile or will misbehave, so it is an error.
//
// "=======" alone is also a Markdown/reStructuredText heading underline, so
// it only counts when the file also gains an unambiguous marker.
func checkMergeConflict(_ *config, f *changedFile, c *collector) {
	unambiguous := false
	for l := range f.addedLines() {
		if isConflictMarker(l.Text, "<<<<<<<") || isConflictMarker(l.Text, ">>>>>>>") || isConflictMarker(l.Text, "|||||||") {
			unambiguous = true
			c.add(f, l.NewLine, SeverityError, RuleMergeConflict,
				"merge conflict marker added; resolve the conflict before merging")
		}
	}
	if !unambiguous {
		return
	}
	for l := range f.addedLines() {
		if l.Text == "=======" {
			c.add(f, l.NewLine, SeverityError, RuleMergeConflict,
				"merge conflict separator added; resolve the conflict before merging")
		}
	}
}

// isConflictMarker reports whether text is marker alone or marker followed
// by a space and a label, as git writes them.
func isConflictMarker(text, marker string) bool {
	rest, ok := strings.CutPrefix(text, marker)
	return ok && (rest == "" || rest[0] == ' ')
}
