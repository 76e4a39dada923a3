package diff

// Diff is a parsed unified diff: the files it changes, in input order.
type Diff struct {
	Files []File
}

// File is the change to one file.
//
// OldPath and NewPath are repository-relative, with git's "a/" and "b/"
// prefixes removed, because that is how code-review systems address files.
// The side that does not exist is empty: OldPath for an added file, NewPath
// for a deleted one (the diff spells that side "/dev/null").
type File struct {
	OldPath string
	NewPath string

	Added   bool // the file did not exist before the change
	Deleted bool // the file does not exist after the change
	Renamed bool // git recorded a rename from OldPath to NewPath
	Copied  bool // git recorded a copy from OldPath to NewPath
	Binary  bool // git gave no textual hunks because the content is binary

	Hunks []Hunk
}

// Path returns the name a reviewer knows the file by: the new path, or the
// old one when the file was deleted and so has no new path.
func (f File) Path() string {
	if f.Deleted {
		return f.OldPath
	}
	return f.NewPath
}

// Hunk is one "@@ -a,b +c,d @@" block: a contiguous region of the file.
//
// OldStart/NewStart are 1-based line numbers as written in the header; when
// the matching count is zero git writes the number of the line before the
// (empty) region, so a start of 0 is legal there.
type Hunk struct {
	OldStart int
	OldLines int
	NewStart int
	NewLines int

	// Section is the text git prints after the closing "@@", usually the
	// enclosing function's signature; empty when absent.
	Section string

	Lines []Line
}

// LineKind says which side(s) of the diff a line belongs to.
type LineKind uint8

// The kinds of line inside a hunk. The zero value is deliberately not a valid
// kind, so a Line that was never filled in is easy to spot.
const (
	Context LineKind = iota + 1 // unchanged; present in both files
	Added                       // present only in the new file ("+")
	Removed                     // present only in the old file ("-")
)

// String returns a lower-case name, for test failures and debugging.
func (k LineKind) String() string {
	switch k {
	case Context:
		return "context"
	case Added:
		return "added"
	case Removed:
		return "removed"
	default:
		return "unknown"
	}
}

// Line is one line of a hunk.
//
// OldLine and NewLine are the 1-based line numbers of this line in the old
// and new file, so a finding can be attached to the right place. A side the
// line does not exist on has number 0: NewLine is 0 for a Removed line and
// OldLine is 0 for an Added one.
type Line struct {
	Kind LineKind
	// Text is the line without its leading ' ', '+' or '-' marker and
	// without its line terminator (a trailing "\r" is dropped too).
	Text    string
	OldLine int
	NewLine int
	// NoNewline reports that the line was followed by a
	// "\ No newline at end of file" marker: it is the last line of its
	// file(s) and is not terminated.
	NoNewline bool
}

// Stats summarises the size of a diff, as shown by `git diff --stat`.
type Stats struct {
	Files     int
	Additions int
	Deletions int
}

// Stats counts files, added lines and removed lines. Binary files count as
// files but contribute no lines, matching what git's own summary does.
func (d *Diff) Stats() Stats {
	if d == nil {
		return Stats{}
	}
	s := Stats{Files: len(d.Files)}
	for i := range d.Files {
		for j := range d.Files[i].Hunks {
			for _, l := range d.Files[i].Hunks[j].Lines {
				switch l.Kind {
				case Added:
					s.Additions++
				case Removed:
					s.Deletions++
				}
			}
		}
	}
	return s
}
