package critic

import (
	"regexp"
	"strings"
)

// checkGoPanic flags panic calls added to non-test Go code. A panic in a
// Lambda handler or server kills the request (or the process) where
// returning an error would let the caller decide; it is occasionally right,
// hence a warning.
func checkGoPanic(_ *config, f *changedFile, c *collector) {
	if f.lang != langGo || f.test || f.generated {
		return
	}
	for l := range f.addedLines() {
		if isCommentLine(l.Text) {
			continue
		}
		i := indexCall(l.Text, "panic")
		if i < 0 {
			continue
		}
		if j := strings.Index(l.Text, "//"); j >= 0 && j < i {
			continue // in a trailing comment
		}
		c.add(f, l.NewLine, SeverityWarning, RuleGoPanic,
			"panic added in non-test code; return an error unless the state is truly unrecoverable")
	}
}

// indexCall finds "name(" where name is not part of a longer identifier or a
// selector (so "x.panic(" and "mustpanic(" do not count).
func indexCall(s, name string) int {
	call := name + "("
	for off := 0; ; {
		i := strings.Index(s[off:], call)
		if i < 0 {
			return -1
		}
		i += off
		if i == 0 || (!isWordByte(s[i-1]) && s[i-1] != '.') {
			return i
		}
		off = i + 1
	}
}

// blankCall matches an assignment of a call's results to blank identifiers
// only, e.g. "_ = f.Close()" or "_, _ = fmt.Fprintf(w, ...)".
var blankCall = regexp.MustCompile(`^\s*_(?:\s*,\s*_)*\s*=\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?\(`)

// checkGoIgnoredError flags Go calls whose results are thrown away with a
// blank assignment. The usual result being dropped is an error; the
// assignment silences the compiler and linters, so a reviewer is the last
// line of defence. Sometimes deliberate, hence informational.
func checkGoIgnoredError(_ *config, f *changedFile, c *collector) {
	if f.lang != langGo || f.test || f.generated {
		return
	}
	for l := range f.addedLines() {
		if !strings.Contains(l.Text, "_") || !blankCall.MatchString(l.Text) {
			continue
		}
		c.add(f, l.NewLine, SeverityInfo, RuleGoIgnoredError,
			"call result discarded with a blank assignment; handle the error or say in a comment why it is safe to ignore")
	}
}
