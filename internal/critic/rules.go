package critic

// Rule ids. They are stable: consumers filter, count and suppress findings
// by them, so an id is never reused for a different check.
const (
	RuleTodoAdded          = "todo-added"          // TODO/FIXME/XXX/HACK comment added
	RuleDebugPrint         = "debug-print"         // print-style debugging left in
	RuleDebuggerStatement  = "debugger-statement"  // breakpoint left in (debugger;, pdb, pry)
	RuleHardcodedSecret    = "hardcoded-secret"    // something shaped like a credential
	RuleMergeConflict      = "merge-conflict"      // <<<<<<< / ======= / >>>>>>> left in
	RuleGoPanic            = "go-panic"            // panic( added to non-test Go code
	RuleGoIgnoredError     = "go-ignored-error"    // _ = f() discarding a result in Go
	RuleTrailingWhitespace = "trailing-whitespace" // per file: added lines ending in spaces/tabs
	RuleLongLine           = "long-line"           // per file: added lines over the length limit
	RuleNoNewlineAtEOF     = "no-newline-at-eof"   // added last line has no terminator
	RuleBinaryAdded        = "binary-added"        // binary file added
	RuleLargeHunk          = "large-hunk"          // one hunk changes too many lines
	RuleLargeFile          = "large-file"          // one file changes too many lines
	RuleMissingTests       = "missing-tests"       // source changed, no test changed anywhere
	RuleFocusedTest        = "focused-test"        // it.only / fdescribe: the rest of the suite is skipped
	RuleSkippedTest        = "skipped-test"        // it.skip / xit / @pytest.mark.skip added
)

// fileRule inspects one changed file.
type fileRule func(cfg *config, f *changedFile, c *collector)

// changeRule inspects the change as a whole.
type changeRule func(cfg *config, files []*changedFile, c *collector)

// fileRules and changeRules are every rule Offline applies. Order does not
// matter: findings are sorted afterwards.
var fileRules = []fileRule{
	checkTodo,
	checkDebug,
	checkSecrets,
	checkMergeConflict,
	checkGoPanic,
	checkGoIgnoredError,
	checkTrailingWhitespace,
	checkLongLines,
	checkNoNewlineAtEOF,
	checkBinaryAdded,
	checkSize,
	checkTestMarkers,
}

var changeRules = []changeRule{
	checkMissingTests,
}

// collector accumulates the findings of one review.
type collector struct {
	findings []Finding
}

// add records a finding against f. It takes the display path from f so no
// rule can accidentally put a raw (unmasked) path in a finding.
func (c *collector) add(f *changedFile, line int, sev Severity, rule, msg string) {
	c.findings = append(c.findings, Finding{
		File:     f.display,
		Line:     line,
		Severity: sev,
		Rule:     rule,
		Message:  msg,
	})
}
