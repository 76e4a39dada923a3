package critic

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// The bounds every critique keeps, whichever critic wrote it (R-BOUND-1).
// A change can hold any number of problems (a diff of key-like lines holds
// one per line), but an email of thousands of findings is read by no one,
// and the critique lives on the job item, which DynamoDB caps at 400 KB.
const (
	// MaxFindingsPerFile caps the findings shown on one file: the most
	// serious are kept.
	MaxFindingsPerFile = 20
	// MaxFindingsTotal caps the findings of one critique, the model's and
	// the offline critic's merged alike.
	MaxFindingsTotal = 100
	// MaxCritiqueBytes bounds a critique's JSON as stored on the job. With
	// the job's other attributes (title, description, recipients: a few
	// tens of KB at their own limits) it stays well under DynamoDB's
	// 400 KB item limit.
	MaxCritiqueBytes = 256 << 10
)

// capFindings keeps at most perFile findings on each file and total in
// all, the most important first (compareImportance), after removing exact
// duplicates. It returns what it kept in presentation order, how many it
// dropped, and the files that lost a finding: their review is incomplete
// (R-LEDGER-1).
func capFindings(fs []Finding, perFile, total int) (kept []Finding, dropped int, lost map[string]bool) {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, compareFindings)
	fs = slices.Compact(fs)
	slices.SortFunc(fs, compareImportance)
	kept = make([]Finding, 0, min(len(fs), total))
	lost = map[string]bool{}
	onFile := map[string]int{}
	for _, f := range fs {
		if len(kept) == total || onFile[f.File] == perFile {
			lost[f.File] = true
			dropped++
			continue
		}
		onFile[f.File]++
		kept = append(kept, f)
	}
	slices.SortFunc(kept, compareFindings)
	return kept, dropped, lost
}

// Bound makes c keep the bounds of R-BOUND-1: at most MaxFindingsPerFile
// findings on a file and MaxFindingsTotal in all, and at most
// MaxCritiqueBytes of JSON, dropping the code at the findings first (the
// least serious findings' first, each marked Excerpt.Cut), then the least
// serious findings (then, should that not do, the list of omitted files and the ledger's
// entries: a file not in the ledger is only reviewed again). Every finding
// dropped is counted in NotShown and the summary ends with a sentence
// saying how many are not shown. A file that lost a finding is taken out
// of the ledger, so the next version reviews it again (R-LEDGER-1).
//
// Both critics bound what they return, Incremental bounds what it merges,
// and the llm stage bounds what it stores: Bound of a bounded critique
// changes nothing.
func Bound(c Critique) Critique {
	kept, dropped, lost := capFindings(c.Findings, MaxFindingsPerFile, MaxFindingsTotal)
	c.Findings = kept
	c.drop(dropped, lost)
	if size(c) <= MaxCritiqueBytes {
		return c
	}
	// The code at the findings goes first, the least important
	// findings' first (R-BOUND-2): a finding without its code still says
	// what is wrong and where.
	if c = cutExcerpts(c); size(c) <= MaxCritiqueBytes {
		return c
	}
	// The findings that fit, most important first: the largest count
	// whose critique fits, by bisection (each try is one encoding).
	byImportance := slices.Clone(c.Findings)
	slices.SortFunc(byImportance, compareImportance)
	try := func(n int) Critique {
		t := c
		t.Findings = slices.Clone(byImportance[:n])
		slices.SortFunc(t.Findings, compareFindings)
		gone := map[string]bool{}
		for _, f := range byImportance[n:] {
			gone[f.File] = true
		}
		t.drop(len(byImportance)-n, gone)
		return t
	}
	lo, hi := 0, len(byImportance) // try(lo) is the fallback; hi does not fit
	for lo < hi-1 {
		if mid := (lo + hi) / 2; size(try(mid)) <= MaxCritiqueBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	c = try(lo)
	for size(c) > MaxCritiqueBytes && len(c.Omitted) > 0 {
		c.Omitted = c.Omitted[:len(c.Omitted)/2]
	}
	if c.Ledger != nil {
		for size(c) > MaxCritiqueBytes && len(c.Ledger.Files) > 0 {
			c.Ledger = &Ledger{Fingerprint: c.Ledger.Fingerprint, Full: c.Ledger.Full, Files: c.Ledger.Files[:len(c.Ledger.Files)/2]}
		}
	}
	if c.Changes != nil && size(c) > MaxCritiqueBytes {
		ch := *c.Changes
		ch.Resolved = nil
		c.Changes = &ch
	}
	return c
}

// drop records n findings dropped from the files in lost: counted, said
// in the summary, those files out of the ledger.
func (c *Critique) drop(n int, lost map[string]bool) {
	if n == 0 {
		return
	}
	c.NotShown += n
	c.Truncated = true
	c.Summary = withNotShown(c.Summary, c.NotShown)
	if c.Ledger == nil {
		return
	}
	l := &Ledger{Fingerprint: c.Ledger.Fingerprint, Full: c.Ledger.Full, Files: []LedgerFile{}}
	for _, f := range c.Ledger.Files {
		if !lost[f.Path] {
			l.Files = append(l.Files, f)
		}
	}
	c.Ledger = l
}

// notShownSentence matches the sentence withNotShown writes, so that a
// critique bounded again (after more was appended to its summary) says the
// new count once.
var notShownSentence = regexp.MustCompile(` ?\b\d+ more findings? not shown\.`)

// withNotShown ends summary with "N more findings not shown." (once).
func withNotShown(summary string, n int) string {
	summary = notShownSentence.ReplaceAllString(summary, "")
	if n <= 0 {
		return summary
	}
	s := fmt.Sprintf("%d more findings not shown.", n)
	if n == 1 {
		s = "1 more finding not shown."
	}
	if summary == "" {
		return s
	}
	return summary + " " + s
}

// size is c's JSON length as stored.
func size(c Critique) int {
	b, err := json.Marshal(c)
	if err != nil {
		return 0 // a Critique always encodes
	}
	return len(b)
}

// cutExcerpts leaves out the excerpts of the least important findings,
// as few as keep c within MaxCritiqueBytes (all of them when that is not
// enough), each marked Cut so the email can say so.
func cutExcerpts(c Critique) Critique {
	var order []int // findings with an excerpt, most important first
	for i, f := range c.Findings {
		if f.Excerpt.Lines != "" {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return c
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareImportance(c.Findings[a], c.Findings[b]) })
	try := func(n int) Critique {
		t := c
		t.Findings = slices.Clone(c.Findings)
		for _, i := range order[n:] {
			t.Findings[i].Excerpt = Excerpt{Cut: true}
		}
		return t
	}
	lo, hi := 0, len(order) // try(lo) is the fallback; hi does not fit
	for lo < hi-1 {
		if mid := (lo + hi) / 2; size(try(mid)) <= MaxCritiqueBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	return try(lo)
}
