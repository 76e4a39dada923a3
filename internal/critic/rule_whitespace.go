package critic

import (
	"fmt"
	"strings"
)

// checkTrailingWhitespace reports, once per file, added lines that end in
// spaces or tabs. Such whitespace is invisible noise that shows up in later
// diffs; one finding per file keeps it from drowning real issues.
//
// Prose is exempt (two trailing spaces are a Markdown line break), as are
// data and generated files.
func checkTrailingWhitespace(_ *config, f *changedFile, c *collector) {
	if f.prose || f.data || f.generated {
		return
	}
	count, first := 0, 0
	for l := range f.addedLines() {
		if strings.HasSuffix(l.Text, " ") || strings.HasSuffix(l.Text, "\t") {
			if count == 0 {
				first = l.NewLine
			}
			count++
		}
	}
	if count == 0 {
		return
	}
	c.add(f, first, SeverityInfo, RuleTrailingWhitespace,
		fmt.Sprintf("%s with trailing whitespace (the first is shown); configure the editor to trim it",
			plural(count, "added line ends", "added lines end")))
}

// checkNoNewlineAtEOF flags a change that leaves the file without a final
// newline. POSIX tools mishandle the last line, and the next edit to the
// file produces a confusing diff of that line.
func checkNoNewlineAtEOF(_ *config, f *changedFile, c *collector) {
	if f.generated || f.file.Binary {
		return
	}
	for l := range f.addedLines() {
		if l.NoNewline {
			c.add(f, l.NewLine, SeverityInfo, RuleNoNewlineAtEOF,
				"file does not end with a newline; add one")
		}
	}
}
