package critic

import (
	"path"
	"regexp"
	"strings"
)

// Code around a hunk (R-CONTEXT-1): the function that encloses it, found
// by a language-aware heuristic, or a window of lines on each side.
//
// Why a heuristic and not a parser: the model is shown code in a dozen
// languages, and a wrong guess costs only a less useful window, never a
// wrong finding (context lines cannot be cited). go/parser knows Go
// alone and fails on a file that does not compile; tree-sitter, which
// knows them all, needs cgo and a grammar per language in a Lambda built
// with CGO_ENABLED=0, and the pure-Go ports are unmaintained or partial.
// A brace scan that skips strings and comments, and Python's indentation,
// find the enclosing function in the files reviews mostly see.
const (
	// ContextLines is how many lines on each side of a hunk's changed
	// lines the model is shown where no enclosing function is found.
	ContextLines = 10
	// MaxEnclosingLines bounds an enclosing function: a longer one is
	// shown as the window of ContextLines instead.
	MaxEnclosingLines = 200
	// maxHeaderLines is how many lines a function's signature may span
	// before its opening brace.
	maxHeaderLines = 4
)

// blockStyle is how a language delimits a function's body.
type blockStyle uint8

const (
	styleNone   blockStyle = iota
	styleBraces            // Go, C and its family, Java, JavaScript, Rust…
	styleIndent            // Python
)

var blockStyles = map[string]blockStyle{
	".go": styleBraces, ".c": styleBraces, ".h": styleBraces, ".cc": styleBraces, ".cpp": styleBraces, ".cxx": styleBraces,
	".hpp": styleBraces, ".hh": styleBraces, ".cs": styleBraces, ".java": styleBraces, ".kt": styleBraces, ".kts": styleBraces,
	".scala": styleBraces, ".groovy": styleBraces, ".js": styleBraces, ".jsx": styleBraces, ".mjs": styleBraces, ".cjs": styleBraces,
	".ts": styleBraces, ".tsx": styleBraces, ".rs": styleBraces, ".swift": styleBraces, ".php": styleBraces, ".dart": styleBraces,
	".m": styleBraces, ".mm": styleBraces,
	".py": styleIndent, ".pyi": styleIndent,
}

// styleOf is the block style of a file by its extension.
func styleOf(p string) blockStyle { return blockStyles[strings.ToLower(path.Ext(p))] }

// span is a range of a file's lines, 1-based and inclusive.
type span struct{ from, to int }

// enclosingSpan is the code around lines first..last (1-based) of a
// file: the function that encloses them, when one is found and is at
// most MaxEnclosingLines long, else ContextLines on each side; clipped
// to the file.
func enclosingSpan(p string, lines []string, first, last int) span {
	var s span
	ok := false
	switch styleOf(p) {
	case styleBraces:
		s, ok = braceFunction(lines, first, last)
	case styleIndent:
		s, ok = pythonFunction(lines, first, last)
	}
	if !ok || s.to-s.from+1 > MaxEnclosingLines {
		s = span{first - ContextLines, last + ContextLines}
	}
	return span{max(s.from, 1), min(s.to, len(lines))}
}

// block is a brace pair: the lines of its { and its }, and the column of
// the {.
type block struct{ open, col, close int }

// braceBlocks pairs a file's braces, skipping those in strings, character
// literals and comments. A string of ", ' ends at its line's end (an
// unterminated one, or a Rust lifetime, spoils one line, not the file); a
// ` string and a /* comment run on across lines.
func braceBlocks(lines []string) []block {
	var out, stack []block
	inComment, inRaw := false, false
	for n, text := range lines {
		var quote byte
		for i := 0; i < len(text); i++ {
			c := text[i]
			switch {
			case inComment:
				if c == '*' && i+1 < len(text) && text[i+1] == '/' {
					inComment = false
					i++
				}
			case inRaw:
				if c == '`' {
					inRaw = false
				}
			case quote != 0:
				if c == '\\' {
					i++
				} else if c == quote {
					quote = 0
				}
			case c == '/' && i+1 < len(text) && text[i+1] == '/':
				i = len(text)
			case c == '/' && i+1 < len(text) && text[i+1] == '*':
				inComment = true
				i++
			case c == '#' && strings.TrimSpace(text[:i]) == "" && !strings.HasPrefix(strings.TrimSpace(text[i:]), "#["):
				i = len(text) // a C preprocessor line or a PHP comment; Rust's #[…] attributes are code
			case c == '"' || c == '\'':
				quote = c
			case c == '`':
				inRaw = true
			case c == '{':
				stack = append(stack, block{open: n + 1, col: i})
			case c == '}':
				if len(stack) > 0 {
					b := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					b.close = n + 1
					out = append(out, b)
				}
			}
		}
	}
	return out
}

var (
	// controlHeader starts a block that is a statement, not a function.
	controlHeader = regexp.MustCompile(`^(\}\s*)?(if|else|for|foreach|while|switch|select|catch|try|finally|do|synchronized|using|lock|unsafe|loop|match|case|default|return|defer|go)\b`)
	// funcKeyword marks a function whatever the rest says.
	funcKeyword = regexp.MustCompile(`(^|[^\w.])(func|function|fn)\b|=>\s*$`)
	// typeHeader starts a type's body, whose blocks hold the methods.
	typeHeader = regexp.MustCompile(`(^|\s)(class|struct|interface|enum|namespace|trait|impl|object|record|union|extension|protocol)\b`)
	// callHeader ends with a parameter list, perhaps followed by what a
	// signature may say after it (throws, const, a return type).
	callHeader = regexp.MustCompile(`\)\s*(->\s*)?[\w\s.,:<>\[\]?&*'|]*$`)
)

// braceFunction finds the innermost brace block around first..last whose
// header looks like a function's.
func braceFunction(lines []string, first, last int) (span, bool) {
	best, found := span{}, false
	for _, b := range braceBlocks(lines) {
		if b.open > first || b.close < last || (found && b.open < best.from) {
			continue
		}
		start, header := signature(lines, b)
		if !isFunctionHeader(header) {
			continue
		}
		if !found || start >= best.from {
			best, found = span{start, b.close}, true
		}
	}
	return best, found
}

// signature is the text before a block's {, joined with up to
// maxHeaderLines lines before it while the text lacks its parameter list
// or continues one, and the lines do not end a statement; and the line it
// starts on.
func signature(lines []string, b block) (int, string) {
	text := strings.TrimSpace(lines[b.open-1][:b.col])
	start := b.open
	for k := 1; k <= maxHeaderLines && b.open-1-k >= 0; k++ {
		prev := strings.TrimSpace(lines[b.open-1-k])
		if prev == "" || strings.HasSuffix(prev, ";") || strings.HasSuffix(prev, "}") || strings.HasSuffix(prev, "{") ||
			strings.HasPrefix(prev, "//") || strings.HasPrefix(prev, "*") || strings.HasPrefix(prev, "@") {
			break
		}
		if text != "" && strings.Contains(text, "(") && !strings.HasPrefix(text, ")") && !strings.HasPrefix(text, ",") &&
			!strings.HasSuffix(prev, "(") && !strings.HasSuffix(prev, ",") {
			break
		}
		text = prev + " " + text
		start = b.open - k
	}
	return start, text
}

// isFunctionHeader tells a function's or method's signature from a
// statement's, a type's or a literal's.
func isFunctionHeader(h string) bool {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return false
	case funcKeyword.MatchString(h):
		return true
	case controlHeader.MatchString(h):
		return false
	case typeHeader.MatchString(h[:strings.IndexByte(h+"(", '(')]):
		return false
	}
	return strings.Contains(h, "(") && callHeader.MatchString(h) && !strings.ContainsAny(h[:strings.IndexByte(h, '(')], "=")
}

// pythonDef starts a function or a class.
var pythonDef = regexp.MustCompile(`^\s*(async\s+def|def|class)\s`)

// pythonFunction finds the nearest def (or class) above first..last that
// is indented less than the lines between, and its body: the lines after
// it indented more, blank ones within.
func pythonFunction(lines []string, first, last int) (span, bool) {
	target := -1
	for i := first; i <= last && i <= len(lines); i++ {
		if t := lines[i-1]; strings.TrimSpace(t) != "" && (target < 0 || indent(t) < target) {
			target = indent(t)
		}
	}
	if target < 0 {
		return span{}, false
	}
	for i := min(first, len(lines)); i >= 1; i-- {
		t := lines[i-1]
		if strings.TrimSpace(t) == "" || indent(t) >= target {
			continue
		}
		if !pythonDef.MatchString(t) {
			target = indent(t) // a statement around the lines: look further out
			continue
		}
		end := i
		for j := i + 1; j <= len(lines); j++ {
			u := lines[j-1]
			if strings.TrimSpace(u) == "" {
				continue
			}
			if indent(u) <= indent(t) {
				break
			}
			end = j
		}
		if end >= last {
			return span{i, end}, true
		}
		return span{}, false
	}
	return span{}, false
}

// indent is a line's leading white space, a tab counting as 8.
func indent(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		default:
			return n
		}
	}
	return n
}
