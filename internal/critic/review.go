package critic

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/retry"
)

// reviewWithLLM prepares the prompt, asks the model, vets its answer and
// assembles the critique. Nothing here logs: the prompt holds the diff,
// which may be confidential.
func reviewWithLLM(ctx context.Context, m Model, cfg llmConfig, in Input) (Critique, error) {
	name := m.Name()
	if err := ctx.Err(); err != nil {
		return Critique{}, fmt.Errorf("critic: %s review: %w", name, err)
	}
	d, err := diff.ParseString(in.Diff)
	if err != nil {
		return Critique{}, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("%w: %w", ErrInvalidDiff, err))
	}
	stats := d.Stats()
	c := Critique{Critic: name, Files: stats.Files, Additions: stats.Additions, Deletions: stats.Deletions, Findings: []Finding{}}
	if stats.Files == 0 {
		c.Summary = "The diff is empty, so there is nothing to review."
		return c, nil
	}
	sel := selectFiles(d, cfg.diffBudget, in.Generated, in.Head)
	sure := highConfidence(d, in.Generated)
	c.Omitted = sel.omitted
	if sel.ctx != (ContextUsage{}) {
		c.Context = &sel.ctx
	}
	if len(sel.sent) == 0 {
		// Nothing worth a model's time: no call, no cost (R-CRITIC-3).
		var lost map[string]bool
		c.Findings, c.NotShown, lost = capFindings(sure, MaxFindingsPerFile, MaxFindingsTotal)
		c.Incomplete, c.Truncated = paths(lost), c.NotShown > 0
		c.Summary = "Nothing in this change is code the model reviews" + omittedText(sel.omitted) + "."
		if len(c.Findings) > 0 {
			c.Summary += " " + foundText(countSeverities(c.Findings))
		}
		c.Summary = withNotShown(c.Summary, c.NotShown)
		return c, nil
	}
	p := buildPrompt(in, sel, cfg, cfg.boundary())
	rep, err := m.Complete(ctx, Request{System: p.system, User: p.user, MaxOutputTokens: cfg.outputTokens(), Temperature: cfg.temperature, StableSystem: p.stable})
	if err != nil {
		return Critique{}, err
	}
	c.Usage = &Usage{InputTokens: rep.InputTokens, OutputTokens: rep.OutputTokens,
		CacheReadTokens: rep.CacheReadTokens, CacheWriteTokens: rep.CacheWriteTokens}
	if len(rep.Text) > maxReplyBytes {
		return Critique{}, retry.Transient(retry.SchemaInvalid, fmt.Errorf("critic: %s: %w: reply of %d bytes", name, ErrMalformedReply, len(rep.Text)))
	}
	pr, err := parseReply(rep.Text, p, rep.Cut)
	if err != nil {
		// Never the reply itself: it may quote the diff.
		return Critique{}, retry.Transient(retry.SchemaInvalid, fmt.Errorf("critic: %s: %w (reply of %d bytes)", name, err, len(rep.Text)))
	}
	found := len(slices.Compact(slices.SortedFunc(slices.Values(pr.findings), compareFindings)))
	model, capped := finalize(pr.findings, cfg.maxFindings)
	// The model's findings and the offline critic's near-certain ones are
	// bounded together, per file and in total (R-BOUND-1): the merge is
	// never larger than the bounds, whatever the diff holds.
	var lost map[string]bool
	var dropped int
	c.Findings, dropped, lost = capFindings(append(model, sure...), MaxFindingsPerFile, MaxFindingsTotal)
	c.NotShown = found - len(model) + dropped
	c.Incomplete = paths(lost)
	c.Cut = rep.Cut || pr.incomplete
	// An answer with as many findings as the cap allows may have stopped
	// before the model got to some files: none of the files it was sent
	// counts as reviewed (R-LEDGER-1).
	c.Capped = capped || pr.answered >= cfg.maxFindings
	c.Truncated = capped || dropped > 0 || c.Cut || hasReason(sel.omitted, OmitOverBudget)
	c.Summary = withNotShown(llmSummary(pr.summary, c, sel, capped), c.NotShown)
	return c, nil
}

// paths lists the set's paths, sorted.
func paths(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// highConfidence is what the offline critic finds with near certainty:
// credentials and merge conflict markers. Merged into every model review,
// whatever the model says (R-CRITIC-4).
func highConfidence(d *diff.Diff, g Generated) []Finding {
	cfg := defaultConfig()
	pv := provenanceOf(g)
	var col collector
	for i := range d.Files {
		cf := classify(&d.Files[i], pv)
		checkSecrets(&cfg, cf, &col)
		checkMergeConflict(&cfg, cf, &col)
	}
	return col.findings
}

func hasReason(os []Omitted, reason string) bool {
	for _, o := range os {
		if o.Reason == reason {
			return true
		}
	}
	return false
}

// llmSummary is the model's summary (or a count) and what the reader must
// know about coverage: files not reviewed, an answer cut short, a cap.
func llmSummary(model string, c Critique, sel selection, capped bool) string {
	var b strings.Builder
	switch {
	case model != "":
		b.WriteString(model)
		if !strings.HasSuffix(model, ".") && !strings.HasSuffix(model, "!") && !strings.HasSuffix(model, "?") {
			b.WriteByte('.')
		}
	case len(c.Findings) == 0:
		b.WriteString("No issues were found.")
	default:
		b.WriteString(foundText(countSeverities(c.Findings)))
	}
	if len(sel.omitted) > 0 {
		fmt.Fprintf(&b, " Not reviewed%s.", omittedText(sel.omitted))
	}
	if c.Cut {
		b.WriteString(" The model's answer was cut at its length limit: only the findings it completed are listed.")
	}
	if capped {
		fmt.Fprintf(&b, " Only the %d most serious findings are listed.", len(c.Findings))
	}
	return b.String()
}

func foundText(all severityCounts) string {
	return fmt.Sprintf("Found %s.", plural(all.total(), "issue", "issues"))
}

// omittedText lists omitted files by reason: ": a, b (generated); c
// (deleted)", at most 8 names.
func omittedText(os []Omitted) string {
	if len(os) == 0 {
		return ""
	}
	var parts []string
	for i, o := range os {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(os)-8))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", o.Path, o.Reason))
	}
	return ": " + strings.Join(parts, ", ")
}
