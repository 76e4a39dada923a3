package diff

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Parse reads a unified diff from r.
//
// Text outside files (commit messages, e-mail headers, diffstats, trailing
// signatures) is skipped. Empty input, or input with no file in it, yields
// an empty Diff and no error. Errors caused by the input wrap ErrMalformed
// and are *ParseError values carrying the line number; an error from r is
// returned wrapped as is.
func Parse(r io.Reader) (*Diff, error) {
	if r == nil {
		return nil, errors.New("diff: Parse called with a nil reader")
	}
	p := parser{src: newReaderLines(r)}
	return p.parse()
}

// ParseString parses a unified diff held in memory. It is equivalent to
// Parse(strings.NewReader(s)) but does not copy line text: every Line.Text
// is a substring of s, which keeps s alive as long as the Diff is.
func ParseString(s string) (*Diff, error) {
	p := parser{src: &stringLines{s: s}}
	return p.parse()
}

// state is where the parser is in the grammar of a multi-file diff.
type state uint8

const (
	// stOutside: between files; only file headers are recognised and any
	// other text (commit messages, mail headers) is skipped.
	stOutside state = iota
	// stHeader: after "diff --git", reading git's extended header lines.
	stHeader
	// stBinary: inside a "GIT binary patch" payload, which is skipped.
	stBinary
	// stFile: after the "+++" line or a complete hunk; expecting a hunk.
	stFile
	// stHunk: inside a hunk whose header promised more lines.
	stHunk
)

// parser holds the state of one parse. It reads each input line exactly once
// (plus one line of look-ahead to pair "---" with "+++"), which is what makes
// parsing linear-time.
type parser struct {
	src    lineSource
	lineNo int // number of the line most recently returned by next

	peeked   bool
	peekLine string
	peekOK   bool
	peekErr  error

	d     Diff
	state state

	// git reports whether the current file began with "diff --git"; it
	// decides how the "a/" and "b/" prefixes of "---"/"+++" names are
	// removed.
	git bool

	// Bookkeeping for the hunk being read.
	hunkLineNo       int // input line of the hunk header, for errors
	oldLeft, newLeft int // lines the header promised that are still to come
	oldNext, newNext int // line numbers of the next old/new line
}

func (p *parser) parse() (*Diff, error) {
	for {
		line, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if err := p.step(line); err != nil {
			return nil, err
		}
	}
	if p.state == stHunk {
		return nil, p.errorAt(p.hunkLineNo, fmt.Sprintf(
			"input ends inside the hunk started here: %d old and %d new lines are missing",
			p.oldLeft, p.newLeft))
	}
	p.normalize()
	return &p.d, nil
}

// step dispatches one line according to the current state.
func (p *parser) step(line string) error {
	switch p.state {
	case stHunk:
		return p.hunkLine(line)
	case stFile:
		return p.fileLine(line)
	case stHeader:
		return p.headerLine(line)
	case stBinary:
		return p.binaryLine(line)
	default:
		return p.outsideLine(line)
	}
}

func (p *parser) outsideLine(line string) error {
	switch {
	case strings.HasPrefix(line, "diff --git "):
		p.startGit(line[len("diff --git "):])
	case strings.HasPrefix(line, "diff --cc ") || strings.HasPrefix(line, "diff --combined "):
		// Combined diffs use one marker column per merge parent; reading
		// them as ordinary hunks would attribute lines to the wrong file.
		return p.errorf("combined (merge) diffs are not supported")
	case strings.HasPrefix(line, "--- "):
		ok, err := p.peekHasPrefix("+++ ")
		if err != nil {
			return err
		}
		if ok {
			return p.startPlain(line)
		}
		// A lone "--- " is prose, e.g. in a commit message.
	case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
		return p.startPlainBinary(line)
	case strings.HasPrefix(line, "@@ -"):
		return p.errorf("hunk header outside of any file")
	}
	return nil
}

// startGit begins a file introduced by "diff --git a/x b/y". The names are
// provisional; later header lines may replace them.
func (p *parser) startGit(names string) {
	a, b := parseGitHeaderNames(names)
	p.d.Files = append(p.d.Files, File{
		OldPath: strings.TrimPrefix(a, "a/"),
		NewPath: strings.TrimPrefix(b, "b/"),
	})
	p.git = true
	p.state = stHeader
}

// headerLine handles git's extended header lines; see git-diff(1),
// "Generating patch text with -p".
func (p *parser) headerLine(line string) error {
	f := p.cur()
	switch {
	case strings.HasPrefix(line, "diff "):
		p.state = stOutside
		return p.outsideLine(line)
	case strings.HasPrefix(line, "--- "):
		ok, err := p.peekHasPrefix("+++ ")
		if err != nil {
			return err
		}
		if !ok {
			return p.errorf(`"---" line is not followed by a "+++" line`)
		}
		return p.fileNames(line)
	case strings.HasPrefix(line, "new file mode "):
		return p.setAdded(f)
	case strings.HasPrefix(line, "deleted file mode "):
		return p.setDeleted(f)
	case strings.HasPrefix(line, "rename from "):
		f.OldPath, _ = parseName(line[len("rename from "):])
		f.Renamed = true
	case strings.HasPrefix(line, "rename old "): // git before 1.5
		f.OldPath, _ = parseName(line[len("rename old "):])
		f.Renamed = true
	case strings.HasPrefix(line, "rename to "):
		f.NewPath, _ = parseName(line[len("rename to "):])
		f.Renamed = true
	case strings.HasPrefix(line, "rename new "):
		f.NewPath, _ = parseName(line[len("rename new "):])
		f.Renamed = true
	case strings.HasPrefix(line, "copy from "):
		f.OldPath, _ = parseName(line[len("copy from "):])
		f.Copied = true
	case strings.HasPrefix(line, "copy to "):
		f.NewPath, _ = parseName(line[len("copy to "):])
		f.Copied = true
	case strings.HasPrefix(line, "old mode "),
		strings.HasPrefix(line, "new mode "),
		strings.HasPrefix(line, "index "),
		strings.HasPrefix(line, "similarity index "),
		strings.HasPrefix(line, "dissimilarity index "):
		// Carry nothing a reviewer needs.
	case strings.HasPrefix(line, "Binary files "):
		f.Binary = true
		p.state = stFile
	case line == "GIT binary patch":
		f.Binary = true
		p.state = stBinary
	case strings.HasPrefix(line, "@@"):
		return p.errorf(`hunk header before the "---" and "+++" lines`)
	default:
		// Anything else ends the header (git emits nothing else here), so
		// treat it as text between files.
		p.state = stOutside
		return p.outsideLine(line)
	}
	return nil
}

// binaryLine skips the base85 payload of "GIT binary patch" until the next
// file. Payload lines start with a length letter, so they cannot be
// mistaken for a header.
func (p *parser) binaryLine(line string) error {
	switch {
	case strings.HasPrefix(line, "diff "):
		p.state = stOutside
		return p.outsideLine(line)
	case strings.HasPrefix(line, "--- "):
		ok, err := p.peekHasPrefix("+++ ")
		if err != nil {
			return err
		}
		if ok {
			p.state = stOutside
			return p.startPlain(line)
		}
	case isSignature(line):
		p.state = stOutside
	}
	return nil
}

// startPlain begins a file introduced by "---"/"+++" without a git header,
// as produced by `diff -u` or by git when the header was cut off.
func (p *parser) startPlain(minus string) error {
	p.d.Files = append(p.d.Files, File{})
	p.git = false
	return p.fileNames(minus)
}

// fileNames consumes the "+++" line that follows minus and records both
// names on the current file.
func (p *parser) fileNames(minus string) error {
	plus, _, err := p.next() // peekHasPrefix guaranteed it exists
	if err != nil {
		return err
	}
	oldName, _ := parseName(minus[len("--- "):])
	newName, _ := parseName(plus[len("+++ "):])
	if oldName == devNull && newName == devNull {
		return p.errorf(`both "---" and "+++" name /dev/null`)
	}
	oldPrefix, newPrefix := "a/", "b/"
	if !p.git && !(hasPrefixOrNull(oldName, oldPrefix) && hasPrefixOrNull(newName, newPrefix)) {
		// Plain diffs only get git-style prefixes stripped when both
		// sides have them; otherwise "a/" may be a real directory.
		oldPrefix, newPrefix = "", ""
	}
	f := p.cur()
	// Names from "rename/copy from/to" are exact, so they win.
	exact := f.Renamed || f.Copied
	if oldName == devNull {
		if err := p.setAdded(f); err != nil {
			return err
		}
	} else if !exact {
		f.OldPath = strings.TrimPrefix(oldName, oldPrefix)
	}
	if newName == devNull {
		if err := p.setDeleted(f); err != nil {
			return err
		}
	} else if !exact {
		f.NewPath = strings.TrimPrefix(newName, newPrefix)
	}
	p.state = stFile
	return nil
}

func hasPrefixOrNull(name, prefix string) bool {
	return name == devNull || strings.HasPrefix(name, prefix)
}

// startPlainBinary handles GNU diff's "Binary files X and Y differ", which
// stands in for a whole file.
func (p *parser) startPlainBinary(line string) error {
	names := strings.TrimSuffix(strings.TrimPrefix(line, "Binary files "), " differ")
	oldName, newName, ok := strings.Cut(names, " and ")
	if !ok {
		return nil // not the message we know; treat as prose
	}
	if oldName == devNull && newName == devNull {
		return p.errorf("binary file is /dev/null on both sides")
	}
	oldPrefix, newPrefix := "a/", "b/"
	if !(hasPrefixOrNull(oldName, oldPrefix) && hasPrefixOrNull(newName, newPrefix)) {
		oldPrefix, newPrefix = "", ""
	}
	f := File{Binary: true}
	if oldName == devNull {
		f.Added = true
	} else {
		f.OldPath = strings.TrimPrefix(oldName, oldPrefix)
	}
	if newName == devNull {
		f.Deleted = true
	} else {
		f.NewPath = strings.TrimPrefix(newName, newPrefix)
	}
	p.d.Files = append(p.d.Files, f)
	p.git = false
	p.state = stFile
	return nil
}

// fileLine handles the lines between hunks of one file.
func (p *parser) fileLine(line string) error {
	switch {
	case strings.HasPrefix(line, "@@"):
		return p.startHunk(line)
	case strings.HasPrefix(line, `\`):
		return p.noNewline()
	case isSignature(line):
		// format-patch's "-- " mail signature: the rest is not diff.
		p.state = stOutside
	case strings.HasPrefix(line, "--- "):
		ok, err := p.peekHasPrefix("+++ ")
		if err != nil {
			return err
		}
		if !ok {
			return p.errorf("line outside any hunk: hunk line counts do not match their header")
		}
		p.state = stOutside
		return p.startPlain(line)
	case line == "":
		// Blank lines separate commits in `git log -p` output.
	case line[0] == '+' || line[0] == '-' || line[0] == ' ':
		// A diff line with no hunk to hold it: the previous hunk header
		// promised fewer lines than it has.
		return p.errorf("line outside any hunk: hunk line counts do not match their header")
	default:
		p.state = stOutside
		return p.outsideLine(line)
	}
	return nil
}

// isSignature reports the "-- " line that starts a mail signature (some
// mailers strip its trailing space).
func isSignature(line string) bool { return line == "-- " || line == "--" }

func (p *parser) startHunk(line string) error {
	h, reason := parseHunkHeader(line)
	if reason != "" {
		return p.errorf(reason)
	}
	// Pre-size from the header, but boundedly: the counts are untrusted
	// until the lines have actually been read.
	h.Lines = make([]Line, 0, min(h.OldLines+h.NewLines, 1024))
	f := p.cur()
	f.Hunks = append(f.Hunks, h)
	p.hunkLineNo = p.lineNo
	p.oldLeft, p.newLeft = h.OldLines, h.NewLines
	p.oldNext, p.newNext = h.OldStart, h.NewStart
	if p.oldLeft > 0 || p.newLeft > 0 {
		p.state = stHunk
	} else {
		p.state = stFile
	}
	return nil
}

// hunkLine reads one line of a hunk, numbering it and checking it against
// the counts promised by the header.
func (p *parser) hunkLine(line string) error {
	kind, text := Context, ""
	if line != "" {
		// An empty line is an empty context line whose leading space was
		// stripped by an editor or mailer; GNU patch accepts it too.
		switch line[0] {
		case ' ':
			kind = Context
		case '+':
			kind = Added
		case '-':
			kind = Removed
		case '\\':
			return p.noNewline()
		default:
			return p.errorf(fmt.Sprintf(
				"hunk ends early: its header promised %d more old and %d more new lines",
				p.oldLeft, p.newLeft))
		}
		text = line[1:]
	}
	ln := Line{Kind: kind, Text: text}
	switch kind {
	case Context:
		if p.oldLeft == 0 || p.newLeft == 0 {
			return p.errorf("context line exceeds the line counts in the hunk header")
		}
		ln.OldLine, ln.NewLine = p.oldNext, p.newNext
		p.oldNext++
		p.newNext++
		p.oldLeft--
		p.newLeft--
	case Added:
		if p.newLeft == 0 {
			return p.errorf("added line exceeds the new line count in the hunk header")
		}
		ln.NewLine = p.newNext
		p.newNext++
		p.newLeft--
	case Removed:
		if p.oldLeft == 0 {
			return p.errorf("removed line exceeds the old line count in the hunk header")
		}
		ln.OldLine = p.oldNext
		p.oldNext++
		p.oldLeft--
	}
	h := p.curHunk()
	h.Lines = append(h.Lines, ln)
	if p.oldLeft == 0 && p.newLeft == 0 {
		p.state = stFile
	}
	return nil
}

// noNewline applies a "\ No newline at end of file" marker to the line
// before it.
func (p *parser) noNewline() error {
	h := p.curHunk()
	if h == nil || len(h.Lines) == 0 {
		return p.errorf(`"\ No newline at end of file" marker without a line before it`)
	}
	last := &h.Lines[len(h.Lines)-1]
	if last.NoNewline {
		return p.errorf(`repeated "\ No newline at end of file" marker`)
	}
	last.NoNewline = true
	return nil
}

func (p *parser) setAdded(f *File) error {
	if f.Deleted {
		return p.errorf("file is marked both added and deleted")
	}
	f.Added = true
	return nil
}

func (p *parser) setDeleted(f *File) error {
	if f.Added {
		return p.errorf("file is marked both added and deleted")
	}
	f.Deleted = true
	return nil
}

// normalize clears the name of the side that does not exist, which the
// "diff --git" header spells as a real name even for added/deleted files.
func (p *parser) normalize() {
	for i := range p.d.Files {
		f := &p.d.Files[i]
		if f.Added {
			f.OldPath = ""
		}
		if f.Deleted {
			f.NewPath = ""
		}
	}
}

// cur returns the file being parsed. Callers are only reached in states
// that imply one exists.
func (p *parser) cur() *File {
	return &p.d.Files[len(p.d.Files)-1]
}

// curHunk returns the last hunk of the current file, or nil.
func (p *parser) curHunk() *Hunk {
	if len(p.d.Files) == 0 {
		return nil
	}
	f := p.cur()
	if len(f.Hunks) == 0 {
		return nil
	}
	return &f.Hunks[len(f.Hunks)-1]
}

// next returns the next input line, consuming any look-ahead first.
func (p *parser) next() (string, bool, error) {
	var (
		line string
		ok   bool
		err  error
	)
	if p.peeked {
		p.peeked = false
		line, ok, err = p.peekLine, p.peekOK, p.peekErr
	} else {
		line, ok, err = p.src.next()
	}
	if err != nil {
		return "", false, p.sourceError(err)
	}
	if ok {
		p.lineNo++
	}
	return line, ok, nil
}

// peekHasPrefix reports whether the next line starts with prefix, without
// consuming it.
func (p *parser) peekHasPrefix(prefix string) (bool, error) {
	if !p.peeked {
		p.peekLine, p.peekOK, p.peekErr = p.src.next()
		p.peeked = true
	}
	if p.peekErr != nil {
		return false, p.sourceError(p.peekErr)
	}
	return p.peekOK && strings.HasPrefix(p.peekLine, prefix), nil
}

// sourceError gives an over-long line its position; I/O errors pass through.
func (p *parser) sourceError(err error) error {
	if errors.Is(err, ErrLineTooLong) {
		return &ParseError{Line: p.lineNo + 1, Reason: "line is too long", Err: ErrLineTooLong}
	}
	return err
}

func (p *parser) errorf(reason string) error { return p.errorAt(p.lineNo, reason) }

func (p *parser) errorAt(line int, reason string) error {
	return &ParseError{Line: line, Reason: reason, Err: ErrMalformed}
}
