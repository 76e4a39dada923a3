package critic

import (
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
)

// summarize writes the critique's summary: what changed and what was found,
// in one to three sentences. It is built from numbers only, so it can never
// repeat anything sensitive from the diff.
func summarize(s diff.Stats, all severityCounts, shown int, truncated bool) string {
	if s.Files == 0 {
		return "The diff is empty, so there is nothing to review."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This change touches %s, adding %s and removing %s.",
		plural(s.Files, "file", "files"),
		plural(s.Additions, "line", "lines"),
		plural(s.Deletions, "line", "lines"))
	if all.total() == 0 {
		b.WriteString(" No issues were found.")
		return b.String()
	}
	var parts []string
	if all.errors > 0 {
		parts = append(parts, plural(all.errors, "error", "errors"))
	}
	if all.warnings > 0 {
		parts = append(parts, plural(all.warnings, "warning", "warnings"))
	}
	if all.infos > 0 {
		parts = append(parts, plural(all.infos, "informational note", "informational notes"))
	}
	fmt.Fprintf(&b, " Found %s: %s.", plural(all.total(), "issue", "issues"), joinEnglish(parts))
	if truncated {
		fmt.Fprintf(&b, " Only the %d most severe are listed.", shown)
	}
	return b.String()
}

// plural formats a count with the right form of its noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// joinEnglish joins items as "a", "a and b" or "a, b and c".
func joinEnglish(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	default:
		return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
	}
}
