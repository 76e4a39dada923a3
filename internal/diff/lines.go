package diff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// lineSource yields the input one line at a time, without terminators.
// There are two implementations so that ParseString can hand out substrings
// of its argument instead of copying every line, while Parse streams from a
// reader; both must split identically (the fuzz test checks that they do).
type lineSource interface {
	// next returns the next line and true, or "" and false at the end of
	// the input. A non-nil error ends parsing.
	next() (string, bool, error)
}

// stringLines splits a string in place.
type stringLines struct {
	s   string
	pos int
}

func (l *stringLines) next() (string, bool, error) {
	if l.pos >= len(l.s) {
		return "", false, nil
	}
	rest := l.s[l.pos:]
	line := rest
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		line = rest[:i]
		l.pos += i + 1
	} else {
		l.pos = len(l.s)
	}
	// Same rule as bufio.ScanLines: drop one carriage return, so CRLF
	// input parses exactly like LF input.
	line = strings.TrimSuffix(line, "\r")
	if len(line) > MaxLineBytes {
		return "", false, ErrLineTooLong
	}
	return line, true, nil
}

// readerLines splits a stream with a bounded buffer, so one enormous line
// cannot make the parser allocate without limit.
type readerLines struct {
	sc *bufio.Scanner
}

func newReaderLines(r io.Reader) *readerLines {
	sc := bufio.NewScanner(r)
	// Room for the longest accepted line plus "\r\n"; anything longer is
	// reported by the scanner as bufio.ErrTooLong.
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes+3)
	return &readerLines{sc: sc}
}

func (l *readerLines) next() (string, bool, error) {
	if l.sc.Scan() {
		b := l.sc.Bytes()
		if len(b) > MaxLineBytes {
			return "", false, ErrLineTooLong
		}
		return string(b), true, nil
	}
	err := l.sc.Err()
	switch {
	case err == nil:
		return "", false, nil
	case errors.Is(err, bufio.ErrTooLong):
		return "", false, ErrLineTooLong
	default:
		return "", false, fmt.Errorf("diff: reading input: %w", err)
	}
}
