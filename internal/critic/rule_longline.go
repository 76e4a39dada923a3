package critic

import (
	"fmt"
	"unicode/utf8"
)

// checkLongLines reports, once per file, added lines longer than the
// configured limit. Very long lines are hard to review side by side and
// often hide minified or pasted content. Prose, data and generated files
// are exempt because long lines are normal there.
func checkLongLines(cfg *config, f *changedFile, c *collector) {
	if f.prose || f.data || f.generated {
		return
	}
	limit := cfg.longLineChars
	count, first, longest := 0, 0, 0
	for l := range f.addedLines() {
		if len(l.Text) <= limit { // bytes >= runes: cheap early exit
			continue
		}
		n := utf8.RuneCountInString(l.Text)
		if n <= limit {
			continue
		}
		if count == 0 {
			first = l.NewLine
		}
		count++
		longest = max(longest, n)
	}
	if count == 0 {
		return
	}
	c.add(f, first, SeverityInfo, RuleLongLine,
		fmt.Sprintf("%s longer than %d characters (the longest has %d; the first is shown); wrap or split them",
			plural(count, "added line is", "added lines are"), limit, longest))
}
