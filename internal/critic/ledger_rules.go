package critic

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
)

// DefaultFullReviewEvery is how many versions a changelist's reviews may
// build on one full review before every file is reviewed again
// (R-LEDGER-3): a finding the model missed in a file that has not changed
// since, whatever made it miss it, is looked for again at least this
// often.
const DefaultFullReviewEvery = 10

// IncrementalOption configures NewIncremental.
type IncrementalOption func(*Incremental)

// WithFullReviewEvery makes a review full when the full review its
// predecessors built on is n or more versions older (default
// DefaultFullReviewEvery); 1 reviews every version in full, still
// comparing it with the one before. Values below 1 are ignored.
func WithFullReviewEvery(n int) IncrementalOption {
	return func(ic *Incremental) {
		if n > 0 {
			ic.fullEvery = n
		}
	}
}

// dueFull reports whether this version must be reviewed in full although
// an earlier review of the same fingerprint could be built on
// (R-LEDGER-3, R-LEDGER-4):
//   - the full review the earlier one built on is FullReviewEvery or more
//     versions old, or unknown (a ledger written before it was recorded);
//   - a file the earlier review covered has left the diff: what it held
//     was read by the model with the files sent alongside it (it may have
//     held instructions that made the model pass over them), so their
//     review is not trusted once it is gone. A diff cut at the size limit
//     (Input.Partial) may just not reach the file: not a reason.
func (ic *Incremental) dueFull(in Input, parts []filePart) bool {
	l := in.Previous.Critique.Ledger
	if l.Full <= 0 || in.ReviewVersion-l.Full >= ic.fullEvery {
		return true
	}
	if in.Partial {
		return false
	}
	inDiff := make(map[string]bool, len(parts))
	for _, p := range parts {
		inDiff[p.path] = true
	}
	for _, f := range l.Files {
		if !inDiff[f.Path] {
			return true
		}
	}
	return false
}

// resolvedBy says which of the earlier version's findings, not reported
// now, are resolved (R-LEDGER-2): only those whose lines changed. A
// finding on a line is resolved when no line of its file's section now
// has that line's text (Anchor); a finding on a whole file (or on a line
// outside the hunks) when the file's section changed since the earlier
// review and its review now is complete; a finding on a file no longer in
// the diff is resolved unless the diff was cut at the size limit; a
// finding on no file only when the critic's answer was neither cut nor
// capped. A finding whose flagged line is still there, not reported again
// (the model passed over it, or never got to it), is not called resolved:
// it is still open (stillOpen), listed as unchanged.
func resolvedBy(parts []filePart, prev *Ledger, done []filePart, c Critique, partial bool) func(Finding) bool {
	byPath := map[string]filePart{}
	for _, p := range parts {
		byPath[p.path] = p
	}
	was := map[string]string{}
	for _, f := range prev.Files {
		was[f.Path] = f.SHA256
	}
	complete := map[string]bool{}
	for _, p := range done {
		complete[p.path] = true
	}
	lines := map[string]map[string]bool{}
	return func(f Finding) bool {
		if f.File == "" {
			return !c.Cut && !c.Capped
		}
		p, ok := byPath[f.File]
		switch {
		case !ok:
			return !partial
		case !p.unique:
			return false
		case f.Anchor == "":
			return was[p.path] != "" && was[p.path] != p.sha && complete[p.path]
		}
		if lines[p.path] == nil {
			lines[p.path] = anchors(p.file)
		}
		return !lines[p.path][f.Anchor]
	}
}

// anchors are the Anchors of every line of f's new side: added and
// context lines.
func anchors(f *diff.File) map[string]bool {
	out := map[string]bool{}
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if l.Kind != diff.Removed {
				out[lineAnchor(l.Text)] = true
			}
		}
	}
	return out
}

// lineAnchor is a line's Anchor: the first 8 bytes of the SHA-256 of its
// text with its white space collapsed, hex.
func lineAnchor(text string) string {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(text), " ")))
	return hex.EncodeToString(sum[:8])
}

// stillOpen are the earlier version's findings compare found neither
// reported again nor resolved, as they stand in this version: on a file
// of the diff, a line's finding moved to where its line now is (the line
// with its text at the same Place, else the first with its text) and
// given that line's Place, a finding on a file whose section changed put
// on the file (line 0). One on no file, or on a name the diff holds
// twice, is not kept.
func stillOpen(open []Finding, parts []filePart, prev *Ledger, at *places) []Finding {
	byPath := map[string]filePart{}
	for _, p := range parts {
		if p.unique {
			byPath[p.path] = p
		}
	}
	was := map[string]string{}
	for _, f := range prev.Files {
		was[f.Path] = f.SHA256
	}
	var out []Finding
	for _, f := range open {
		p, ok := byPath[f.File]
		if f.File == "" || !ok {
			continue
		}
		f.New = false
		switch {
		case f.Anchor != "":
			line := at.lineOf(f.File, f.Anchor, f.Place)
			if line == 0 {
				continue // resolved: cannot be, resolvedBy found its line
			}
			f.Line, f.Place = line, at.of(f.File, line)
		case was[p.path] != p.sha:
			f.Line, f.Place = 0, ""
		}
		out = append(out, f)
	}
	return out
}
