package critic

import (
	"context"
	"crypto/sha256"
	"encoding/base64"

	"github.com/criticizer/criticizer/internal/diff"
)

// Ledger is what a review covered, stored with its critique so that the
// next version's review can build on it (Incremental). It is kept small,
// because the critique lives on the job item and a write bills the item's
// size: per file its path and a hash, nothing else. A file's findings are
// the critique's findings on that path.
type Ledger struct {
	// Fingerprint names the critic, its version and every setting that
	// shaped its findings (Fingerprinter). Findings are carried over only
	// to a review with the same fingerprint.
	Fingerprint string `json:"fingerprint"`
	// Full is the version of the last review that sent every file, which
	// this one builds on (itself, for a full review); 0 in a ledger
	// written before it was recorded. A review at least
	// FullReviewEvery versions after it is full again (R-LEDGER-3).
	Full int `json:"full,omitempty"`
	// Files are the files whose review is complete (R-LEDGER-1): every
	// file of the diff but those the critic left out for its budget,
	// those that lost a finding to a cap (Critique.Incomplete, Bound),
	// and, when the model's answer was cut or reached the findings cap
	// (Critique.Cut, Critique.Capped), every file it was sent in that
	// answer (their findings may be missing). A file listed twice under
	// one display name is not listed.
	Files []LedgerFile `json:"files"`
}

// LedgerFile is one reviewed file.
type LedgerFile struct {
	// Path is the file's name as findings show it (displayPath).
	Path string `json:"path"`
	// SHA256 is the hash of the file's section of the diff in its
	// canonical text (diff.Format): paths, kind, every hunk header with its
	// line numbers and section heading, every line with its marker. The
	// same hash means the same change at the same lines, so findings and
	// their line numbers stay valid. Unpadded base64url.
	SHA256 string `json:"sha256"`
}

// Fingerprinter is a critic that can name what shapes its findings: its
// identity and version (a model's name and the prompt's version) and its
// settings, including instructions that depend on the Input (a
// repository's). Incremental carries findings over, and compares
// versions, only between reviews with the same fingerprint; a critic that
// is not a Fingerprinter always reviews in full.
type Fingerprinter interface {
	Fingerprint(in Input) string
}

// WholeChange is a critic some of whose rules judge the change as a whole
// (the offline critic's "code changed without tests"). Such a finding
// depends on every file, so Incremental neither carries it over nor takes
// it from a review of some files: it asks the critic for those rules'
// findings on the whole diff.
type WholeChange interface {
	// WholeChangeRules are the ids of the rules that judge the change as
	// a whole.
	WholeChangeRules() []string
	// ReviewWholeChange applies only those rules to the whole diff of in
	// (d, parsed).
	ReviewWholeChange(ctx context.Context, in Input, d *diff.Diff) ([]Finding, error)
}

// Summarizer is a critic whose summary is written from the findings and
// the diff alone (the offline critic's counts), so it can be written again
// for a critique whose findings partly come from an earlier review.
// Another critic's summary is about what it was sent.
type Summarizer interface {
	Summarize(d *diff.Diff, findings []Finding, truncated bool) string
}

// filePart is one file of a diff with its display name and hash.
type filePart struct {
	file *diff.File
	path string // displayPath of the file's name
	sha  string
	// unique: no other file of the diff has the same display name, so
	// findings on path are this file's.
	unique bool
}

// splitFiles cuts d into its files.
func splitFiles(d *diff.Diff) []filePart {
	parts := make([]filePart, len(d.Files))
	seen := map[string]int{}
	for i := range d.Files {
		f := &d.Files[i]
		sum := sha256.Sum256([]byte(diff.Format(*f)))
		parts[i] = filePart{file: f, path: displayPath(f.Path()), sha: base64.RawURLEncoding.EncodeToString(sum[:])}
		seen[parts[i].path]++
	}
	for i := range parts {
		parts[i].unique = seen[parts[i].path] == 1
	}
	return parts
}

// anchor is a finding's Anchor: the first 8 bytes of the SHA-256 of the
// flagged line's text with its white space collapsed (so re-indenting the
// line keeps it), hex; empty for line 0 or a line not in the file's hunks.
func anchor(f *diff.File, line int) string {
	if f == nil || line <= 0 {
		return ""
	}
	for i := range f.Hunks {
		h := &f.Hunks[i]
		if line < h.NewStart || line >= h.NewStart+h.NewLines {
			continue
		}
		for _, l := range h.Lines {
			if l.Kind != diff.Removed && l.NewLine == line {
				return lineAnchor(l.Text)
			}
		}
	}
	return ""
}
