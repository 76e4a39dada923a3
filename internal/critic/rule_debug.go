package critic

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// debugPattern is one way of leaving debugging behind, in one language.
type debugPattern struct {
	lang language
	// hint is a substring every match contains; the regexp runs only when
	// it is present, which keeps the rule cheap on ordinary lines.
	hint string
	re   *regexp.Regexp
	// label names the construct in the message. Messages use this fixed
	// label rather than the matched text, so they never quote the diff.
	label    string
	rule     string
	severity Severity
	// skipCLI exempts command-line programs, where printing to stdout is
	// the point rather than a leftover.
	skipCLI bool
}

var debugPatterns = []debugPattern{
	{lang: langGo, hint: "fmt.Print", re: regexp.MustCompile(`\bfmt\.Print(?:ln)?\(`),
		label: "fmt.Print/fmt.Println", rule: RuleDebugPrint, severity: SeverityWarning, skipCLI: true},
	{lang: langGo, hint: "print", re: regexp.MustCompile(`(?:^|[^\w.])print(?:ln)?\(`),
		label: "builtin print/println", rule: RuleDebugPrint, severity: SeverityWarning},
	{lang: langJS, hint: "console.", re: regexp.MustCompile(`\bconsole\.(?:log|debug|trace|dir)\(`),
		label: "console.log", rule: RuleDebugPrint, severity: SeverityWarning},
	{lang: langJS, hint: "debugger", re: regexp.MustCompile(`(?:^\s*|[;{}]\s*)debugger\s*(?:;|$)`),
		label: "debugger statement", rule: RuleDebuggerStatement, severity: SeverityWarning},
	{lang: langPython, hint: "print(", re: regexp.MustCompile(`^\s*print\(`),
		label: "print()", rule: RuleDebugPrint, severity: SeverityWarning, skipCLI: true},
	{lang: langPython, hint: "set_trace(", re: regexp.MustCompile(`\b(?:i?pdb|pudb|ipdb)\.set_trace\(`),
		label: "pdb.set_trace()", rule: RuleDebuggerStatement, severity: SeverityWarning},
	{lang: langPython, hint: "breakpoint(", re: regexp.MustCompile(`^\s*breakpoint\(\)`),
		label: "breakpoint()", rule: RuleDebuggerStatement, severity: SeverityWarning},
	{lang: langRuby, hint: "binding.", re: regexp.MustCompile(`\bbinding\.(?:pry|irb)\b`),
		label: "binding.pry", rule: RuleDebuggerStatement, severity: SeverityWarning},
	{lang: langRuby, hint: "byebug", re: regexp.MustCompile(`^\s*byebug\b`),
		label: "byebug", rule: RuleDebuggerStatement, severity: SeverityWarning},
}

// checkDebug flags debugging aids added to code: stray prints clutter logs
// and can leak data, and a breakpoint left in hangs or crashes production.
func checkDebug(_ *config, f *changedFile, c *collector) {
	if f.generated || f.lang == langOther {
		return
	}
	cli := isCLIPath(f.path)
	for l := range f.addedLines() {
		if isCommentLine(l.Text) {
			continue
		}
		for i := range debugPatterns {
			p := &debugPatterns[i]
			if p.lang != f.lang || (p.skipCLI && cli) || !strings.Contains(l.Text, p.hint) || !p.re.MatchString(l.Text) {
				continue
			}
			var msg string
			if p.rule == RuleDebuggerStatement {
				msg = fmt.Sprintf("%s added; a breakpoint left in code stops or crashes it outside a debugger", p.label)
			} else {
				msg = fmt.Sprintf("%s added; remove the debug output or use the project's logger", p.label)
			}
			c.add(f, l.NewLine, p.severity, p.rule, msg)
			break // one finding per line
		}
	}
}

// isCLIPath guesses whether a file belongs to a command-line program, where
// printing is legitimate: Go's cmd/ layout, main.go, __main__.py, scripts.
func isCLIPath(p string) bool {
	switch path.Base(p) {
	case "main.go", "__main__.py", "cli.py", "manage.py", "setup.py":
		return true
	}
	for seg := range strings.SplitSeq(path.Dir(p), "/") {
		switch seg {
		case "cmd", "scripts", "bin", "tools", "examples", "example":
			return true
		}
	}
	return false
}
