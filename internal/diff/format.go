package diff

import (
	"strconv"
	"strings"
)

// Format writes files as a git-style unified diff that Parse reads back to
// the same files: the same paths and flags, hunk headers (with their
// section headings), lines and "\ No newline at end of file" markers.
//
// It exists so that a diff can be cut into files and a part of it handed
// on as a diff of its own (the incremental review sends a critic only the
// files that changed since the last reviewed version), and so that one
// file's change has one canonical text to hash whatever produced the
// original (git, GNU diff, a mail with a patch in it). What the parser
// drops is not written: git's index and mode lines, similarity indexes,
// binary payloads and any text between files.
func Format(files ...File) string {
	var b strings.Builder
	for i := range files {
		formatFile(&b, &files[i])
	}
	return b.String()
}

func formatFile(b *strings.Builder, f *File) {
	oldName, newName := f.OldPath, f.NewPath
	// The side that does not exist has no name in a parsed File; git's
	// header names the file on both sides all the same.
	if f.Added && oldName == "" {
		oldName = newName
	}
	if f.Deleted && newName == "" {
		newName = oldName
	}
	b.WriteString("diff --git " + quoteName("a/"+oldName) + " " + quoteName("b/"+newName) + "\n")
	switch {
	case f.Added:
		b.WriteString("new file mode 100644\n")
	case f.Deleted:
		b.WriteString("deleted file mode 100644\n")
	}
	switch {
	case f.Renamed:
		b.WriteString("rename from " + quoteName(f.OldPath) + "\nrename to " + quoteName(f.NewPath) + "\n")
	case f.Copied:
		b.WriteString("copy from " + quoteName(f.OldPath) + "\ncopy to " + quoteName(f.NewPath) + "\n")
	}
	minus, plus := quoteName("a/"+oldName), quoteName("b/"+newName)
	if f.Added {
		minus = devNull
	}
	if f.Deleted {
		plus = devNull
	}
	if f.Binary {
		// Hunks may follow git's "Binary files … differ" directly; a
		// "---" line there would start another file.
		b.WriteString("Binary files " + minus + " and " + plus + " differ\n")
	} else if len(f.Hunks) > 0 {
		b.WriteString("--- " + minus + "\n+++ " + plus + "\n")
	}
	for i := range f.Hunks {
		formatHunk(b, &f.Hunks[i])
	}
}

func formatHunk(b *strings.Builder, h *Hunk) {
	b.WriteString("@@ -" + strconv.Itoa(h.OldStart) + "," + strconv.Itoa(h.OldLines) +
		" +" + strconv.Itoa(h.NewStart) + "," + strconv.Itoa(h.NewLines) + " @@")
	if h.Section != "" {
		b.WriteString(" " + h.Section)
	}
	b.WriteByte('\n')
	for _, l := range h.Lines {
		switch l.Kind {
		case Added:
			b.WriteByte('+')
		case Removed:
			b.WriteByte('-')
		default:
			b.WriteByte(' ')
		}
		b.WriteString(l.Text)
		// The parser drops one carriage return before a line feed, so a
		// text that ends in one keeps it only behind another.
		if strings.HasSuffix(l.Text, "\r") {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
		if l.NoNewline {
			b.WriteString("\\ No newline at end of file\n")
		}
	}
}

// quoteName quotes a file name the way git does when it holds bytes that
// would make a header ambiguous: control characters, quotes, backslashes,
// spaces, tabs and anything outside ASCII (as octal escapes, which the
// parser decodes byte by byte).
func quoteName(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < ' ' || c >= 0x7f {
				b.WriteByte('\\')
				b.WriteByte('0' + c>>6)
				b.WriteByte('0' + c>>3&7)
				b.WriteByte('0' + c&7)
				continue
			}
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
