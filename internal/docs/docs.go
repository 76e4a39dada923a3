// Package docs reads the project's Markdown pages — README.md, docs/*.md
// and infra/README.md — for the tests that keep them true to the code: the
// commands their shell blocks and inline code show, the links between
// them, and their headings' anchors.
//
// It is written by hand rather than on a Markdown library because the
// tests need only fenced blocks, inline code spans, inline links and ATX
// headings, each with the page and line it came from, and the pages keep
// to that subset.
package docs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Page is one Markdown file.
type Page struct {
	// Path is slash-separated and relative to the repository root.
	Path  string
	Lines []string
}

// Root finds the repository root: the nearest directory, from the working
// directory up, whose go.mod declares the project's module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/criticizer/criticizer\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("docs: no go.mod of module github.com/criticizer/criticizer above the working directory")
		}
		dir = parent
	}
}

// Load reads README.md, every docs/*.md (sorted) and infra/README.md.
func Load(root string) ([]Page, error) {
	paths := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(more)
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			return nil, err
		}
		paths = append(paths, filepath.ToSlash(rel))
	}
	paths = append(paths, "infra/README.md")
	var pages []Page
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("docs: %w", err)
		}
		pages = append(pages, Page{Path: p, Lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")})
	}
	return pages, nil
}

// Block is a fenced code block.
type Block struct {
	// Line is the 1-based line of the block's first content line.
	Line  int
	Lang  string
	Lines []string
}

// fence reports whether line opens or closes a fenced block, and the
// opening fence's info string.
func fence(line string) (bool, string) {
	t := strings.TrimLeft(line, " ")
	if !strings.HasPrefix(t, "```") {
		return false, ""
	}
	return true, strings.TrimSpace(strings.TrimLeft(t, "`"))
}

// Blocks returns the page's fenced code blocks.
func (p Page) Blocks() []Block {
	var out []Block
	var cur *Block
	for i, line := range p.Lines {
		if ok, info := fence(line); ok {
			if cur == nil {
				cur = &Block{Line: i + 2, Lang: info}
				continue
			}
			out = append(out, *cur)
			cur = nil
			continue
		}
		if cur != nil {
			// Indented blocks (inside a list) are dedented by their
			// fence's indentation at most; shell does not care.
			cur.Lines = append(cur.Lines, strings.TrimLeft(line, " "))
		}
	}
	return out
}

// prose returns the page's lines outside fenced blocks, by line number
// (1-based), with an empty string in place of each fenced line.
func (p Page) prose() []string {
	out := make([]string, len(p.Lines))
	in := false
	for i, line := range p.Lines {
		if ok, _ := fence(line); ok {
			in = !in
			continue
		}
		if !in {
			out[i] = line
		}
	}
	return out
}

// Command is one command a page shows.
type Command struct {
	Page string
	Line int
	// Text is the command as a shell would read it: continuation lines
	// joined, a trailing comment removed.
	Text string
	// Dir is the directory it runs in, relative to the root: "." unless
	// an earlier `cd DIR &&` of the same block moved it.
	Dir string
	// Inline marks a command quoted in prose (a code span), often a
	// partial one (`criticizer jobs show` without its id).
	Inline bool
}

// shellLangs are the info strings of blocks holding commands to run.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}

// Commands returns the commands of the page's shell blocks, and the code
// spans in its prose that start with one of the given words (after any
// VAR=value assignments), e.g. "make" or "criticizer".
func (p Page) Commands(inlineWords ...string) []Command {
	var out []Command
	for _, b := range p.Blocks() {
		if !shellLangs[b.Lang] {
			continue
		}
		dir := "."
		for i := 0; i < len(b.Lines); i++ {
			start := b.Line + i
			text := b.Lines[i]
			for strings.HasSuffix(strings.TrimRight(text, " "), `\`) && i+1 < len(b.Lines) {
				text = strings.TrimSuffix(strings.TrimRight(text, " "), `\`) + " " + strings.TrimSpace(b.Lines[i+1])
				i++
			}
			text = strings.TrimSpace(stripComment(text))
			if text == "" {
				continue
			}
			if d, rest, ok := strings.Cut(text, " && "); ok && strings.HasPrefix(d, "cd ") {
				dir = filepath.ToSlash(filepath.Join(dir, strings.TrimSpace(strings.TrimPrefix(d, "cd "))))
				text = rest
			}
			out = append(out, Command{Page: p.Path, Line: start, Text: text, Dir: dir})
		}
	}
	for _, span := range p.Spans() {
		w := strings.Fields(withoutAssignments(span.Text))
		if len(w) == 0 {
			continue
		}
		for _, want := range inlineWords {
			if w[0] == want {
				out = append(out, Command{Page: p.Path, Line: span.Line, Text: span.Text, Dir: ".", Inline: true})
				break
			}
		}
	}
	return out
}

// Span is a code span in prose (tables included).
type Span struct {
	// Line is the 1-based line where the span starts.
	Line int
	// Text is the span's content; a span that wraps has its line break
	// read as a space, as Markdown renders it.
	Text string
}

// Spans returns the code spans outside fenced blocks. A span may wrap
// onto the next lines of its paragraph.
func (p Page) Spans() []Span {
	var out []Span
	lines := p.prose()
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		// A paragraph: this line and the non-blank ones after it.
		start := i
		var para []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			para = append(para, lines[i])
		}
		text := strings.Join(para, "\n")
		for {
			j := strings.IndexByte(text, '`')
			if j < 0 {
				break
			}
			n := 1
			for j+n < len(text) && text[j+n] == '`' {
				n++
			}
			k := strings.Index(text[j+n:], strings.Repeat("`", n))
			if k < 0 {
				break
			}
			line := start + 1 + strings.Count(text[:j], "\n")
			content := strings.ReplaceAll(text[j+n:j+n+k], "\n", " ")
			out = append(out, Span{Line: line, Text: strings.TrimSpace(content)})
			// Keep the line count: cut the text, not its newlines.
			text = strings.Repeat("\n", strings.Count(text[:j+n+k+n], "\n")) + text[j+n+k+n:]
		}
	}
	return out
}

// assignment matches a leading VAR=value word.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*\s+`)

// withoutAssignments drops the leading VAR=value words of a command.
func withoutAssignments(s string) string {
	s = strings.TrimSpace(s)
	for {
		loc := assignment.FindStringIndex(s)
		if loc == nil {
			return s
		}
		s = s[loc[1]:]
	}
}

// Argv is the command's words without leading VAR=value assignments, as
// Words splits them.
func (c Command) Argv() ([]string, error) {
	return Words(withoutAssignments(c.Text))
}

// stripComment removes a shell comment: a # at the start of a word,
// outside quotes.
func stripComment(s string) string {
	var q rune
	prev := ' '
	for i, r := range s {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '\'' || r == '"':
			q = r
		case r == '#' && unicode.IsSpace(prev):
			return s[:i]
		}
		prev = r
	}
	return s
}

// withoutSpans blanks the line's code spans, backticks included.
func withoutSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			return b.String() + line
		}
		n := 1
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		j := strings.Index(line[i+n:], strings.Repeat("`", n))
		if j < 0 {
			return b.String() + line
		}
		b.WriteString(line[:i])
		line = line[i+n+j+n:]
	}
}

// Words splits a command line as a POSIX shell would split a simple
// command: on blanks, with single quotes, double quotes and backslashes
// honoured; a $(…) substitution stays one word, unexpanded. Operators
// (&&, |, ;) end the command: only the first simple command is returned.
func Words(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	have := false
	flush := func() {
		if have {
			words = append(words, cur.String())
		}
		cur.Reset()
		have = false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			have = true
		case r == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(string(rs[i+1 : j]))
			i, have = j, true
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			cur.WriteString(string(rs[i+1 : j]))
			i, have = j, true
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(rs); j++ {
				if rs[j] == '(' {
					depth++
				} else if rs[j] == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated $( in %q", s)
			}
			cur.WriteString(string(rs[i : j+1]))
			i, have = j, true
		case r == '|' || r == ';' || (r == '&' && i+1 < len(rs) && rs[i+1] == '&'):
			flush()
			return words, nil
		case unicode.IsSpace(r):
			flush()
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	flush()
	return words, nil
}

// Link is a relative link of a page: [text](Target) or ![alt](Target).
type Link struct {
	Page   string
	Line   int
	Target string
}

// linkRE matches an inline link's destination; code spans are removed
// first, so a `[x](y)` in code is not a link.
var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// Links returns the page's links outside code, without those to
// absolute URLs (a scheme such as https: or mailto:).
func (p Page) Links() []Link {
	var out []Link
	scheme := regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	for i, line := range p.prose() {
		for _, m := range linkRE.FindAllStringSubmatch(withoutSpans(line), -1) {
			if scheme.MatchString(m[1]) {
				continue
			}
			out = append(out, Link{Page: p.Path, Line: i + 1, Target: m[1]})
		}
	}
	return out
}

// Anchors returns the anchors GitHub gives the page's headings.
func (p Page) Anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range p.prose() {
		t := strings.TrimLeft(line, "#")
		if len(t) == len(line) || len(line)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		s := Slug(t)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Slug is GitHub's anchor for a heading: lower case, letters, digits,
// '-' and '_' kept, spaces made '-', everything else (punctuation,
// backticks, dashes such as '—') dropped.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
