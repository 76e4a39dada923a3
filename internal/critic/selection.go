package critic

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
)

// Why a file of the diff was not sent to the model (Omitted.Reason).
const (
	OmitGenerated  = "generated" // lock files, generated code, minified assets
	OmitVendored   = "vendored"  // vendor/, node_modules/, third_party/
	OmitBinary     = "binary"    // no text to read
	OmitDeleted    = "deleted"   // named to the model, content not sent
	OmitOverBudget = "did not fit the budget"
	OmitNoChanges  = "no changed lines" // a pure rename or mode change
)

// Omitted is a file of the diff the model did not read, and why.
type Omitted struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// sentFile is a file whose numbered hunks go to the model.
type sentFile struct {
	path string // as in the diff (matching the model's answer)
	text string // the numbered rendering
	// lines are the new file's line numbers the model may cite: added and
	// context lines.
	lines map[int]bool
	file  *diff.File
	// context is the code around the hunks read at the head (R-CONTEXT-1),
	// and contextLines its lines' numbers: shown, never cited.
	context      string
	contextLines map[int]bool
}

// selection is what of a diff is sent.
type selection struct {
	sent    []sentFile
	deleted []string // named only
	omitted []Omitted
	bytes   int
	// ctx is what the code around the hunks cost and left out.
	ctx ContextUsage
}

// priority orders what is worth the budget: source code first, then its
// tests, then configuration and data, then prose, then files that claim
// to be generated (R-CRITIC-7: reviewed, after the hand-written ones).
func priority(cf *changedFile) int {
	switch {
	case cf.claimed:
		return 4
	case cf.test:
		return 1
	case cf.source:
		return 0
	case cf.prose:
		return 3
	default:
		return 2
	}
}

// selectFiles chooses the files to send under budget bytes of numbered
// text (R-CRITIC-3); g says which files are machine-written (R-CRITIC-7).
// The budget goes to hunks first; what they leave goes to the code around
// them read at the head (head), file by file in the same order of
// priority, whole regions only (R-CONTEXT-2).
func selectFiles(d *diff.Diff, budget int, g Generated, head HeadFiles) selection {
	pv := provenanceOf(g)
	var s selection
	type cand struct {
		cf   *changedFile
		text string
		pos  int
	}
	var cands []cand
	for i := range d.Files {
		f := &d.Files[i]
		cf := classify(f, pv)
		switch {
		case f.Binary:
			s.omitted = append(s.omitted, Omitted{cf.display, OmitBinary})
		case cf.vendored:
			s.omitted = append(s.omitted, Omitted{cf.display, OmitVendored})
		case cf.generated:
			s.omitted = append(s.omitted, Omitted{cf.display, OmitGenerated})
		case f.Deleted:
			s.deleted = append(s.deleted, cf.display)
			s.omitted = append(s.omitted, Omitted{cf.display, OmitDeleted})
		case cf.additions == 0 && cf.deletions == 0:
			s.omitted = append(s.omitted, Omitted{cf.display, OmitNoChanges})
		default:
			cands = append(cands, cand{cf, numbered(f, cf.claimed), i})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(priority(a.cf), priority(b.cf)) })
	for _, c := range cands {
		if s.bytes+len(c.text) > budget {
			s.omitted = append(s.omitted, Omitted{c.cf.display, OmitOverBudget})
			continue
		}
		s.bytes += len(c.text)
		s.sent = append(s.sent, sentFile{path: c.cf.path, text: c.text, lines: citable(c.cf.file), file: c.cf.file})
	}
	for i := range s.sent {
		f := &s.sent[i]
		content, ok := head[f.path]
		if !ok {
			continue
		}
		text, nums, left := fileContext(f.file, content, f.lines, budget-s.bytes-contextHeaderBytes)
		s.ctx.RegionsOverBudget += left
		if text == "" {
			continue
		}
		f.context, f.contextLines = text, nums
		s.bytes += len(text)
		s.ctx.Files++
		s.ctx.Lines += len(nums)
	}
	// The model reads the files in the diff's order.
	order := map[string]int{}
	for i := range d.Files {
		order[d.Files[i].Path()] = i
	}
	slices.SortStableFunc(s.sent, func(a, b sentFile) int { return cmp.Compare(order[a.path], order[b.path]) })
	return s
}

// isVendored recognises the directories vendored code lives in. Like a
// generated name, it is the file's own claim (machineWritten).
func isVendored(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if vendorDirs[seg] {
			return true
		}
	}
	return false
}

// citable is the set of new-file line numbers a finding may name.
func citable(f *diff.File) map[int]bool {
	m := map[int]bool{}
	for i := range f.Hunks {
		for _, l := range f.Hunks[i].Lines {
			if l.Kind != diff.Removed && l.NewLine > 0 {
				m[l.NewLine] = true
			}
		}
	}
	return m
}

// numbered renders a file for the model: a header naming the change, then
// each hunk with the new file's line number on every added and context
// line, and removed lines apart, unnumbered, so the model never counts
// from the hunk header (R-CRITIC-1).
//
//	File: internal/store/store.go (modified)
//	Hunk at new lines 10-19, in: func (s *Store) Get
//	    10    func (s *Store) Get(ctx context.Context, id string) (*Item, error) {
//	       -  	row := s.db.QueryRowContext(ctx, "…", id)
//	    11 +  	row := s.db.QueryRowContext(ctx, "…"+id+"'")
//
// A file that claims to be generated, which neither the base nor the
// deployment calls so, says it in its header: the model reviews it as
// hand-written (R-CRITIC-7).
func numbered(f *diff.File, claimed bool) string {
	var b strings.Builder
	kind := "modified"
	switch {
	case f.Added:
		kind = "new file"
	case f.Renamed:
		kind = "renamed from " + flatten(f.OldPath)
	case f.Copied:
		kind = "copied from " + flatten(f.OldPath)
	}
	if claimed {
		kind += "; " + ClaimReason + ", which nothing but the change says: review it as hand-written code"
	}
	fmt.Fprintf(&b, "File: %s (%s)\n", flatten(f.Path()), kind)
	for i := range f.Hunks {
		h := &f.Hunks[i]
		end := h.NewStart + max(h.NewLines, 1) - 1
		fmt.Fprintf(&b, "Hunk at new lines %d-%d", h.NewStart, end)
		if s := flatten(h.Section); s != "" {
			fmt.Fprintf(&b, ", in: %s", s)
		}
		b.WriteByte('\n')
		for _, l := range h.Lines {
			switch l.Kind {
			case diff.Added:
				fmt.Fprintf(&b, "%6d +  %s\n", l.NewLine, l.Text)
			case diff.Context:
				fmt.Fprintf(&b, "%6d    %s\n", l.NewLine, l.Text)
			case diff.Removed:
				fmt.Fprintf(&b, "%6s -  %s\n", "", l.Text)
			}
		}
	}
	return b.String()
}

// flatten makes a name or header fit on one line.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
