// Package termtext keeps text that others wrote from steering an
// operator's terminal (R-TERM-1). Usernames, titles, diffs, notes and
// addresses come from webhooks and API callers; printed raw, an ESC
// sequence can retitle the window, hide lines, rewrite what is on the
// screen or plant a link, a C1 control does the same on terminals that
// honour 8-bit controls, and a bidi override makes text read otherwise
// than it is ("txt.exe" shown as "exe.txt").
//
// Unsafe is the one definition; Escape and Writer make such characters
// visible as \uXXXX (which JSON reads back as the same character), and
// Check refuses them in input.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r must not reach a terminal as it is: the C0
// controls but tab and newline (ESC, carriage return and backspace among
// them), DEL, the C1 controls (U+0080–U+009F), and the bidi controls —
// the embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069,
// the marks U+200E, U+200F and U+061C — with the line and paragraph
// separators U+2028 and U+2029.
func Unsafe(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r >= 0x2028 && r <= 0x2029:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Escape returns s with every Unsafe character written as \uXXXX and
// every byte that is not UTF-8 as U+FFFD; anything else is unchanged.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s { // invalid bytes range as utf8.RuneError, U+FFFD
		if Unsafe(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if Unsafe(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// Check says what is wrong with input that holds an Unsafe character
// (which one, escaped, and where), or "" when there is none: an API that
// takes operator input answers it as a 400 naming the field.
func Check(s string) string {
	for i, r := range s {
		if Unsafe(r) {
			return fmt.Sprintf(`must not hold control or bidi characters (\u%04x at byte %d)`, r, i)
		}
	}
	return ""
}

// Writer returns a writer that passes what is written through Escape on
// its way to w. A UTF-8 sequence cut at the end of one write waits for
// the next, so a character split across writes is not mangled. It reports
// len(p) written when w took everything.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct {
	w    io.Writer
	tail []byte
}

func (e *writer) Write(p []byte) (int, error) {
	buf := append(e.tail, p...)
	cut := len(buf)
	// Hold back at most the last 3 bytes when they start a sequence that
	// is not complete yet.
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	e.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(e.w, Escape(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}
