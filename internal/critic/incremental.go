package critic

import (
	"context"
	"fmt"
	"slices"

	"github.com/criticizer/criticizer/internal/diff"
)

// Incremental wraps any critic so that a rerun reviews only what changed
// (R-COST-3) and says what changed (R-MAIL-3).
//
// Given the review of an earlier version (Input.Previous), made with the
// same fingerprint (Fingerprinter: the same critic, prompt version and
// instructions), it splits the diff into files and compares each file's
// section with the hash in that review's ledger. A file whose section is
// the same keeps its findings, unchanged, without being sent; only the
// other files go to the wrapped critic, as a diff of their own. A file of
// the earlier version that is no longer in the diff is no longer reviewed:
// its findings are resolved.
//
// What cannot be taken file by file is decided on the whole change:
//   - findings of rules that judge the change as a whole (WholeChange: the
//     offline critic's "code changed without tests") are asked of the
//     whole diff every time, never carried over nor taken from the review
//     of some files;
//   - a finding with no file, or on a name not in the diff, is never
//     carried over: it comes only from the critic's review of this
//     version;
//   - the summary is the critic's, about the files it was sent, unless it
//     can write one from the findings (Summarizer);
//   - the findings cap bounds what the critic is asked for in one review;
//     the findings carried over were each within the cap of the review
//     that made them, so a rerun's critique can hold more than the cap,
//     but never more than the bounds every critique keeps (R-BOUND-1:
//     per file and in total); a file that loses a finding to them is
//     reviewed again next time.
//
// It then compares the findings with the earlier version's (Changes, and
// Finding.New), whether or not any was carried over, and records its own
// ledger. With no earlier review, one made under another fingerprint, or
// Input.Fresh, the critic reviews the whole diff; Fresh (an operator's
// rerun) still compares, another fingerprint does not: findings of another
// critic or other instructions are not the same review's.
//
// What a file's carried findings can be trusted for is R-LEDGER-1 to
// R-LEDGER-4 (ledger_rules.go): a file is carried over only when the
// earlier review covered it completely, a finding is resolved only when
// the lines it flagged changed, and every FullReviewEvery versions, or
// when a file the earlier review covered has left the diff, every file is
// reviewed again.
//
// An Incremental is safe for concurrent use if the wrapped critic is.
type Incremental struct {
	critic    Critic
	fullEvery int
}

var _ Critic = (*Incremental)(nil)

// NewIncremental wraps c.
func NewIncremental(c Critic, opts ...IncrementalOption) *Incremental {
	ic := &Incremental{critic: c, fullEvery: DefaultFullReviewEvery}
	for _, o := range opts {
		if o != nil {
			o(ic)
		}
	}
	return ic
}

// Review implements Critic.
func (ic *Incremental) Review(ctx context.Context, in Input) (Critique, error) {
	d, err := diff.ParseString(in.Diff)
	if err != nil {
		return Critique{}, fmt.Errorf("%w: %w", ErrInvalidDiff, err)
	}
	fp := ""
	if f, ok := ic.critic.(Fingerprinter); ok {
		fp = f.Fingerprint(in)
	}
	parts := splitFiles(d)
	prev := in.Previous
	same := fp != "" && prev != nil && prev.Critique.Ledger != nil && prev.Critique.Ledger.Fingerprint == fp
	carried := map[string]bool{}
	full := in.ReviewVersion
	if same && !in.Fresh && !ic.dueFull(in, parts) {
		carried = carry(parts, prev.Critique.Ledger)
		full = prev.Critique.Ledger.Full
	}

	var c Critique
	if len(carried) == 0 {
		sub := in
		sub.Previous = nil
		if c, err = ic.critic.Review(ctx, sub); err != nil {
			return Critique{}, err
		}
	} else if c, err = ic.partial(ctx, in, d, parts, carried); err != nil {
		return Critique{}, err
	}

	byPath := map[string]*diff.File{}
	for _, p := range parts {
		if p.unique {
			byPath[p.path] = p.file
		}
	}
	at := newPlaces(byPath)
	for i := range c.Findings {
		f := &c.Findings[i]
		f.Anchor, f.New = anchor(byPath[f.File], f.Line), false
		f.Place = ""
		if f.Anchor != "" {
			f.Place = at.of(f.File, f.Line)
		}
	}
	if same {
		// A finding of the earlier version not reported now is resolved
		// only when its lines changed; otherwise it is still open, and
		// listed as unchanged (R-LEDGER-2).
		var open []Finding
		c.Changes, open = compare(prev, c.Findings, wholeChangeRules(ic.critic),
			resolvedBy(parts, prev.Critique.Ledger, complete(parts, c, carried), c, in.Partial))
		c.Findings = append(c.Findings, stillOpen(open, parts, prev.Critique.Ledger, at)...)
	}
	// The merge of carried and new findings keeps the bounds too; a file
	// that loses a finding here is not complete (R-BOUND-1, R-LEDGER-1).
	kept, dropped, lost := capFindings(c.Findings, MaxFindingsPerFile, MaxFindingsTotal)
	c.Findings = kept
	if dropped > 0 {
		c.NotShown += dropped
		c.Truncated = true
		c.Incomplete = append(c.Incomplete, paths(lost)...)
	}
	// A summary written again from the findings (Summarizer) says what
	// the bounds left out too.
	c.Summary = withNotShown(c.Summary, c.NotShown)
	if fp == "" {
		return c, nil
	}
	c.Ledger = newLedger(fp, full, complete(parts, c, carried))
	switch {
	case same:
		c.Changes.New, c.Changes.Unchanged = 0, 0
		for _, f := range c.Findings {
			if f.New {
				c.Changes.New++
			} else {
				c.Changes.Unchanged++
			}
		}
		c.Changes.Reviewed, c.Changes.Carried = len(parts)-len(carried), len(carried)
	case prev != nil && prev.Critique.Ledger != nil:
		c.Summary += fmt.Sprintf(" Reviewed in full: the critic or its instructions changed since version %d.", prev.Version)
	}
	return c, nil
}

// carry lists the files whose section is the one the ledger recorded.
func carry(parts []filePart, l *Ledger) map[string]bool {
	was := make(map[string]string, len(l.Files))
	for _, f := range l.Files {
		was[f.Path] = f.SHA256
	}
	out := map[string]bool{}
	for _, p := range parts {
		if p.unique && was[p.path] == p.sha {
			out[p.path] = true
		}
	}
	return out
}

// partial reviews the files not carried over and merges: their findings,
// the carried files' findings from the previous review, and the
// whole-change findings of the whole diff.
func (ic *Incremental) partial(ctx context.Context, in Input, d *diff.Diff, parts []filePart, carried map[string]bool) (Critique, error) {
	prev := in.Previous
	var changed []diff.File
	for _, p := range parts {
		if !carried[p.path] {
			changed = append(changed, *p.file)
		}
	}
	var c Critique
	if len(changed) > 0 {
		sub := in
		sub.Diff, sub.Previous = diff.Format(changed...), nil
		var err error
		if c, err = ic.critic.Review(ctx, sub); err != nil {
			return Critique{}, err
		}
	} else {
		c = Critique{Critic: prev.Critique.Critic,
			Summary: fmt.Sprintf("No file changed since version %d: its findings are carried over.", prev.Version)}
	}
	whole := wholeChangeRules(ic.critic)
	fs := make([]Finding, 0, len(c.Findings)+len(prev.Critique.Findings))
	for _, f := range c.Findings {
		if !whole[f.Rule] {
			fs = append(fs, f)
		}
	}
	for _, f := range prev.Critique.Findings {
		if carried[f.File] && !whole[f.Rule] {
			fs = append(fs, f)
		}
	}
	if wc, ok := ic.critic.(WholeChange); ok {
		more, err := wc.ReviewWholeChange(ctx, in, d)
		if err != nil {
			return Critique{}, err
		}
		fs = append(fs, more...)
	}
	slices.SortFunc(fs, compareFindings)
	c.Findings = slices.Compact(fs)
	for _, o := range prev.Critique.Omitted {
		if carried[o.Path] {
			c.Omitted = append(c.Omitted, o)
		}
	}
	st := d.Stats()
	c.Files, c.Additions, c.Deletions = st.Files, st.Additions, st.Deletions
	if s, ok := ic.critic.(Summarizer); ok {
		c.Summary = s.Summarize(d, c.Findings, c.Truncated)
	}
	return c, nil
}

// maxLedgerBytes bounds a ledger's files as stored (about 1,000 files of
// usual names): the critique lives on the job item, which DynamoDB caps at
// 400 KB and bills by size. The files of a larger change past the bound
// are not recorded, so the next version reviews them again.
const maxLedgerBytes = 64 << 10

// complete lists the files whose review is complete (R-LEDGER-1): those
// carried over, and those reviewed now, unless left out for the budget,
// sent in an answer that was cut or that reached the findings cap (any of
// them may have findings the model never wrote), or cut by a cap
// themselves (Critique.Incomplete: findings not shown). A carried file
// that lost a finding to the bounds of the merge is not complete either.
func complete(parts []filePart, c Critique, carried map[string]bool) []filePart {
	skipped := map[string]bool{}
	for _, o := range c.Omitted {
		if o.Reason == OmitOverBudget {
			skipped[o.Path] = true
		}
	}
	cut := map[string]bool{}
	for _, p := range c.Incomplete {
		cut[p] = true
	}
	var out []filePart
	for _, p := range parts {
		if !p.unique || cut[p.path] {
			continue
		}
		if carried[p.path] || !(skipped[p.path] || c.Cut || c.Capped) {
			out = append(out, p)
		}
	}
	return out
}

// newLedger records the complete files, as many as fit maxLedgerBytes, in
// the diff's order, and the version of the full review it builds on.
func newLedger(fp string, full int, done []filePart) *Ledger {
	l := &Ledger{Fingerprint: fp, Full: full, Files: []LedgerFile{}}
	size := 0
	for _, p := range done {
		// An entry's JSON: {"path":"…","sha256":"…"}, and a comma.
		if size += len(p.path) + len(p.sha) + 24; size > maxLedgerBytes {
			break
		}
		l.Files = append(l.Files, LedgerFile{Path: p.path, SHA256: p.sha})
	}
	return l
}

func wholeChangeRules(c Critic) map[string]bool {
	out := map[string]bool{}
	if wc, ok := c.(WholeChange); ok {
		for _, r := range wc.WholeChangeRules() {
			out[r] = true
		}
	}
	return out
}
