package critic

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/diff"
)

// HeadFiles are changed files as the version under review wrote them,
// read at its head commit by the fetch stage (R-CONTEXT-1), by path as in
// the diff. Only the LLM critic reads them, for the code around each
// hunk; the offline critic reviews the diff alone.
type HeadFiles map[string]string

// ContextUsage is what the code around the hunks (R-CONTEXT-1) added to
// a model review: files and lines shown, and regions the budget left out
// (R-CONTEXT-2). Stored with the critique, emitted as metrics.
type ContextUsage struct {
	Files             int `json:"files,omitempty"`
	Lines             int `json:"lines,omitempty"`
	RegionsOverBudget int `json:"regions_over_budget,omitempty"`
}

// contextHeaderBytes is kept from a file's context budget for its header
// line.
const contextHeaderBytes = 160

// ContextPaths are the files of d worth reading at the head for context,
// the most useful first (source, then tests, then the rest, as the
// budget spends), at most limit: files with changed lines that are not
// binary, deleted, vendored or generated, nor claim to be (R-CRITIC-7:
// a file that says it is machine-written is reviewed, without context).
// more counts the files past the limit.
func ContextPaths(d *diff.Diff, g Generated, limit int) (paths []string, more int) {
	pv := provenanceOf(g)
	type cand struct {
		path string
		prio int
	}
	var cands []cand
	for i := range d.Files {
		f := &d.Files[i]
		if f.Binary || f.Deleted || styleOf(f.Path()) == styleNone && !textual(f.Path()) {
			continue
		}
		cf := classify(f, pv)
		if cf.generated || cf.vendored || cf.claimed || cf.additions == 0 {
			continue
		}
		cands = append(cands, cand{f.Path(), priority(cf)})
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.prio, b.prio) })
	for i, c := range cands {
		if i == limit {
			return paths, len(cands) - limit
		}
		paths = append(paths, c.path)
	}
	return paths, 0
}

// textual: a file without a known block style still gets a window of
// lines when it is code or configuration (not prose or data: a window of
// a CSV tells the model nothing).
func textual(p string) bool {
	cf := classify(&diff.File{NewPath: p}, provenance{})
	return cf.source || cf.test
}

// fileContext renders the code around f's hunks in content (the file at
// the head): for each hunk, the enclosing function or ContextLines on
// each side (enclosingSpan), merged, less the lines the hunks show; at
// most budget bytes, whole regions only. It returns the text, its lines'
// numbers (which a finding may not cite) and how many regions did not
// fit. A file that is not valid UTF-8 or whose lines do not match the
// diff's (read at another commit) gets none.
func fileContext(f *diff.File, content string, shown map[int]bool, budget int) (string, map[int]bool, int) {
	if !utf8.ValidString(content) || strings.IndexByte(content, 0) >= 0 {
		return "", nil, 0
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	var spans []span
	for i := range f.Hunks {
		h := &f.Hunks[i]
		first, last := 0, 0
		for _, l := range h.Lines {
			if l.Kind == diff.Added {
				if first == 0 {
					first = l.NewLine
				}
				last = l.NewLine
			}
			if l.Kind != diff.Removed && l.NewLine > 0 && (l.NewLine > len(lines) || strings.TrimSuffix(lines[l.NewLine-1], "\r") != strings.TrimSuffix(l.Text, "\r")) {
				return "", nil, 0 // not the version the diff shows
			}
		}
		if first == 0 { // only removals: around where they were
			first, last = h.NewStart, h.NewStart+max(h.NewLines, 1)-1
		}
		spans = append(spans, enclosingSpan(f.Path(), lines, first, last))
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.from <= merged[n-1].to+1 {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	var b strings.Builder
	nums := map[int]bool{}
	left := 0
	for _, s := range merged {
		var r strings.Builder
		gap := false
		own := map[int]bool{}
		for n := s.from; n <= s.to; n++ {
			if shown[n] {
				if !gap && r.Len() > 0 {
					r.WriteString("   ...  (the hunk above)\n")
				}
				gap = true
				continue
			}
			gap = false
			fmt.Fprintf(&r, "%6d |  %s\n", n, lines[n-1])
			own[n] = true
		}
		if len(own) == 0 {
			continue
		}
		if b.Len()+r.Len() > budget {
			left++
			continue
		}
		if b.Len() > 0 {
			b.WriteString("   ...\n")
		}
		b.WriteString(r.String())
		for n := range own {
			nums[n] = true
		}
	}
	if b.Len() == 0 {
		return "", nil, left
	}
	return fmt.Sprintf("Context of %s at the version's head (read only, cite none of these lines):\n", flatten(f.Path())) + b.String(), nums, left
}
