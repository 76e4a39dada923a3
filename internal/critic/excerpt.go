package critic

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/redact"
)

// The code at a finding (R-MAIL-5): the email shows, under each finding on
// a line, that line and a few lines around it as the diff has them, so a
// reader knows what is meant without opening the change. The llm stage
// takes them from the diff it reviewed and stores them with the findings
// (Excerpts), bounded, so notify renders them without reading the diff.
const (
	// ExcerptContext is how many lines of the flagged line's hunk are
	// shown on each side of it, at most.
	ExcerptContext = 2
	// ExcerptLineRunes is where a long line is cut (its last rune then an
	// ellipsis), after its tabs are expanded.
	ExcerptLineRunes = 160
	// excerptTab is the tab stop tabs are expanded to.
	excerptTab = 4
)

// Excerpt is the diff's lines at a finding: the flagged line and up to
// ExcerptContext lines on each side of it in its hunk, in the diff's
// order (removed lines included). It is a value of comparable fields, so
// a Finding stays comparable (slices.Compact).
//
// The lines are data from an untrusted change: stored already cleaned
// (control and bidirectional-formatting characters replaced by U+FFFD,
// tabs expanded, secrets and addresses redacted as redact.Text does, long
// lines cut), and escaped and defanged where they are shown (R-MAIL-2).
type Excerpt struct {
	// Lines are the lines, separated by "\n", each its diff marker ('+'
	// added, '-' removed, ' ' context) and its text.
	Lines string `json:"lines,omitempty"`
	// At is the flagged line's place among Lines, from 1.
	At int `json:"at,omitempty"`
	// Cut: the finding had an excerpt and the critique's size bound left
	// it out (R-BOUND-2); the email counts it among the code it does not
	// show.
	Cut bool `json:"cut,omitempty"`
}

// ExcerptLine is one line of an Excerpt.
type ExcerptLine struct {
	// Kind is the line's diff marker: '+', '-' or ' '.
	Kind byte
	// Text is the line without its marker.
	Text string
	// Flagged: the line the finding is about.
	Flagged bool
}

// Split returns e's lines; none for an empty (or cut) excerpt.
func (e Excerpt) Split() []ExcerptLine {
	if e.Lines == "" {
		return nil
	}
	raw := strings.Split(e.Lines, "\n")
	out := make([]ExcerptLine, 0, len(raw))
	for i, l := range raw {
		k := byte(' ')
		if l != "" {
			k, l = l[0], l[1:]
		}
		if k != '+' && k != '-' {
			k = ' '
		}
		out = append(out, ExcerptLine{Kind: k, Text: l, Flagged: i+1 == e.At})
	}
	return out
}

// Excerpts sets the Excerpt of every finding of c from d, the diff c
// reviewed: the flagged line's hunk lines for a finding on a line of the
// diff's new side, none for a whole-file finding, a line outside the
// hunks or a file the diff names twice. Whatever a finding carried is
// replaced (a finding carried over from an earlier version gets this
// version's lines); the resolved findings of c's comparison get none
// (their lines are another version's).
func Excerpts(c Critique, d *diff.Diff) Critique {
	byPath := map[string]*diff.File{}
	if d != nil {
		for _, p := range splitFiles(d) {
			if p.unique {
				byPath[p.path] = p.file
			}
		}
	}
	fs := make([]Finding, len(c.Findings))
	for i, f := range c.Findings {
		f.Excerpt = excerptAt(byPath[f.File], f.Line)
		fs[i] = f
	}
	c.Findings = fs
	if ch := c.Changes; ch != nil && len(ch.Resolved) > 0 {
		cp := *ch
		cp.Resolved = WithoutExcerpts(cp.Resolved)
		c.Changes = &cp
	}
	return c
}

// WithoutExcerpts returns fs with no excerpts (a copy when any had one).
func WithoutExcerpts(fs []Finding) []Finding {
	var out []Finding
	for i, f := range fs {
		if f.Excerpt == (Excerpt{}) {
			continue
		}
		if out == nil {
			out = append([]Finding(nil), fs...)
		}
		out[i].Excerpt = Excerpt{}
	}
	if out == nil {
		return fs
	}
	return out
}

// excerptAt is the excerpt of line (of f's new side), or none.
func excerptAt(f *diff.File, line int) Excerpt {
	if f == nil || line <= 0 {
		return Excerpt{}
	}
	for hi := range f.Hunks {
		h := &f.Hunks[hi]
		if line < h.NewStart || line >= h.NewStart+h.NewLines {
			continue
		}
		at := -1
		for i, l := range h.Lines {
			if l.Kind != diff.Removed && l.NewLine == line {
				at = i
				break
			}
		}
		if at < 0 {
			return Excerpt{}
		}
		lo, hi := max(0, at-ExcerptContext), min(len(h.Lines), at+ExcerptContext+1)
		keys := privateKeyLines(h.Lines[:hi])
		var b strings.Builder
		for i := lo; i < hi; i++ {
			l := h.Lines[i]
			if i > lo {
				b.WriteByte('\n')
			}
			switch l.Kind {
			case diff.Added:
				b.WriteByte('+')
			case diff.Removed:
				b.WriteByte('-')
			default:
				b.WriteByte(' ')
			}
			if keys[i] {
				b.WriteString("[REDACTED:private_key]")
				continue
			}
			b.WriteString(cutLine(redact.Text(CleanCode(l.Text))))
		}
		return Excerpt{Lines: b.String(), At: at - lo + 1}
	}
	return Excerpt{}
}

// privateKeyLines marks the lines of a hunk (up to the excerpt's end)
// that belong to a PEM private key: redact.Text finds a key block in one
// text, but an excerpt is cut out of it line by line, and a key's body
// lines alone look like any base64. A body whose BEGIN line lies above
// the hunk is not recognised; its lines are at most what git shows as
// context.
func privateKeyLines(lines []diff.Line) map[int]bool {
	var out map[int]bool
	in := false
	for i, l := range lines {
		begin := strings.Contains(l.Text, "-----BEGIN") && strings.Contains(l.Text, "PRIVATE KEY")
		if begin {
			in = true
		}
		if in {
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
		if strings.Contains(l.Text, "-----END") && strings.Contains(l.Text, "PRIVATE KEY") {
			in = false
		}
	}
	return out
}

// CleanCode makes a line of untrusted code safe to show as text: invalid
// UTF-8, control characters and Unicode format characters (the
// bidirectional overrides and isolates of "Trojan Source", zero-width
// characters, a byte order mark) become U+FFFD, visibly, and tabs are
// expanded to stops of 4 columns. The email runs it again on what it
// shows.
func CleanCode(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	clean := true
	for _, r := range s {
		if r == '\t' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch {
		case r == '\t':
			n := excerptTab - col%excerptTab
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			r = '\uFFFD'
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// cutLine cuts s to ExcerptLineRunes runes, the last an ellipsis.
func cutLine(s string) string {
	if utf8.RuneCountInString(s) <= ExcerptLineRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == ExcerptLineRunes-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
