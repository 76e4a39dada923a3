package termtext_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/termtext"
)

// unsafeRunes is every character R-TERM-1 names: C0 but tab and newline,
// DEL, C1, the bidi embeddings, overrides, isolates and marks, and the
// line and paragraph separators.
func unsafeRunes() []rune {
	var rs []rune
	for r := rune(0); r < 0x20; r++ {
		if r != '\t' && r != '\n' {
			rs = append(rs, r)
		}
	}
	for r := rune(0x7f); r <= 0x9f; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x202a); r <= 0x202e; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x2066); r <= 0x2069; r++ {
		rs = append(rs, r)
	}
	return append(rs, 0x200e, 0x200f, 0x061c, 0x2028, 0x2029)
}

// hasUnsafe reports the first raw unsafe character in s, if any.
func hasUnsafe(s string) (rune, bool) {
	for _, r := range s {
		if termtext.Unsafe(r) {
			return r, true
		}
	}
	return 0, false
}

// Every C0, C1, bidi and ESC character is escaped, visible, and read back
// by JSON as itself; tab, newline, and other text (accents, CJK, emoji)
// pass unchanged; a byte that is not UTF-8 becomes U+FFFD.
// Rules: R-TERM-1.
func TestEscape_C0C1BidiESC(t *testing.T) {
	for _, r := range unsafeRunes() {
		in := "a" + string(r) + "b"
		got := termtext.Escape(in)
		if bad, ok := hasUnsafe(got); ok {
			t.Errorf("Escape(%q) = %q keeps U+%04X", in, got, bad)
		}
		if want := fmt.Sprintf(`a\u%04xb`, r); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(`"`+got+`"`), &back); err != nil || back != in {
			t.Errorf("%q does not read back as JSON: %q %v", got, back, err)
		}
		if termtext.Check(in) == "" {
			t.Errorf("Check(%q) accepted U+%04X", in, r)
		}
	}
	for _, ok := range []string{"plain", "tab\there\nnewline", "Grüße 日本 🚀 Ünïcödé", `back\slash "quoted"`} {
		if got := termtext.Escape(ok); got != ok {
			t.Errorf("Escape(%q) = %q, want it unchanged", ok, got)
		}
		if msg := termtext.Check(ok); msg != "" {
			t.Errorf("Check(%q) = %q", ok, msg)
		}
	}
	if got := termtext.Escape("a\xffb\x9b[31m"); got != "a\ufffdb\ufffd[31m" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// The writer escapes across writes: a character split between two writes
// comes out whole, an ESC sequence split likewise comes out escaped.
// Rules: R-TERM-1.
func TestWriter_EscapesAcrossWrites(t *testing.T) {
	var buf bytes.Buffer
	w := termtext.Writer(&buf)
	in := "ok \x1b]0;pwned\x07 é \u202eexe.txt \u0085 日本\n"
	b := []byte(in)
	for i := range b { // one byte at a time: every cut there is
		if n, err := w.Write(b[i : i+1]); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	want := `ok \u001b]0;pwned\u0007 é \u202eexe.txt \u0085 日本` + "\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	if strings.ContainsRune(buf.String(), utf8RuneError) {
		t.Error("a split character was mangled")
	}
}

const utf8RuneError = '\ufffd'
