package critic

import (
	"fmt"
	"regexp"
)

// checkMissingTests flags a change that adds production code but touches no
// test anywhere. It is a change-level finding, attached to the first such
// file by path so that it has a stable place in the sorted output.
func checkMissingTests(_ *config, files []*changedFile, c *collector) {
	var first *changedFile
	n := 0
	for _, f := range files {
		if f.test {
			return // some test changed; that is all this rule asks
		}
		if f.source && !f.generated && f.additions > 0 {
			n++
			if first == nil || f.display < first.display {
				first = f
			}
		}
	}
	if first == nil {
		return
	}
	c.add(first, 0, SeverityWarning, RuleMissingTests,
		fmt.Sprintf("%s changed but no test file was; add or update tests that cover the change",
			plural(n, "source file", "source files")))
}

// focusedTest matches Jest/Mocha/Jasmine/Vitest focus helpers.
var focusedTest = regexp.MustCompile(`\b(?:describe|it|test|context|suite)\.only\s*\(|(?:^|[^\w.$])f(?:describe|it)\s*\(`)

// skippedTest matches disabled tests in JavaScript and Python.
var skippedTest = regexp.MustCompile(`\b(?:describe|it|test|context|suite)\.skip\s*\(|(?:^|[^\w.$])x(?:describe|it)\s*\(|@pytest\.mark\.skip\b|@unittest\.skip\b`)

// checkTestMarkers flags focused and skipped tests. A focused test makes the
// runner silently skip the rest of the suite, so CI passes without running
// it; a skipped test is coverage quietly lost.
func checkTestMarkers(_ *config, f *changedFile, c *collector) {
	if f.lang != langJS && f.lang != langPython {
		return
	}
	for l := range f.addedLines() {
		if isCommentLine(l.Text) {
			continue
		}
		switch {
		case f.lang == langJS && containsAny(l.Text, ".only", "fit", "fdescribe") && focusedTest.MatchString(l.Text):
			c.add(f, l.NewLine, SeverityWarning, RuleFocusedTest,
				"focused test added (.only or fdescribe/fit); the runner will skip every other test")
		case containsAny(l.Text, ".skip", "xit", "xdescribe") && skippedTest.MatchString(l.Text):
			c.add(f, l.NewLine, SeverityInfo, RuleSkippedTest,
				"test disabled; make sure re-enabling it is tracked")
		}
	}
}
