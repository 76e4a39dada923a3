package diff

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes the parser panic, that the streaming
// and in-memory parsers agree, that every successful parse is internally
// consistent (line numbers, hunk counts, and Stats all agree), and that
// Format writes what Parse reads back to the same files.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.diff"))
	if err != nil {
		f.Fatal(err)
	}
	// The diffs the fetchers were recorded serving: GitHub's diff and
	// Gerrit's format-patch output (mail header and signature included).
	files = append(files, filepath.Join("..", "source", "testdata", "github", "pull.diff"),
		filepath.Join("..", "source", "testdata", "gerrit", "patch.mbox"))
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	f.Add("")
	f.Add("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n")
	f.Add("diff --git \"a/q\\303\\251\" \"b/q\\303\\251\"\nrename from x\nrename to y\n")

	f.Fuzz(func(t *testing.T, in string) {
		d, err := ParseString(in)
		d2, err2 := Parse(strings.NewReader(in))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ParseString err = %v, Parse err = %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			var pe, pe2 *ParseError
			if !errors.As(err, &pe) || !errors.As(err2, &pe2) || pe.Line != pe2.Line {
				t.Fatalf("errors disagree: %v vs %v", err, err2)
			}
			return
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatal("Parse and ParseString disagree")
		}
		checkInvariants(t, d)
		checkRoundTrip(t, d.Files)
	})
}
