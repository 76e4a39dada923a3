package critic

import (
	"context"
	"fmt"

	"github.com/criticizer/criticizer/internal/diff"
)

// OfflineName identifies Offline's output in Critique.Critic. The version is
// bumped whenever rules change in a way that changes output for the same
// input, so stored critiques can be told apart.
const OfflineName = "offline/v1"

// Offline is a deterministic, rule-based Critic that needs no network. It
// looks only at the diff (Input's other fields are for critics that write
// prose) and mostly at added lines, because that is the code being proposed.
//
// An Offline is immutable after NewOffline and safe for concurrent use.
type Offline struct {
	cfg config
}

var _ Critic = (*Offline)(nil)

// NewOffline returns an offline critic configured by opts.
func NewOffline(opts ...Option) *Offline {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	return &Offline{cfg: cfg}
}

// Review parses in.Diff and applies every rule to it.
//
// It fails only when ctx is done or when the diff is malformed, in which case
// the error wraps ErrInvalidDiff (and the parser's diff.ErrMalformed). An
// empty diff is not an error: it yields a critique saying there is nothing to
// review.
func (o *Offline) Review(ctx context.Context, in Input) (Critique, error) {
	if err := ctx.Err(); err != nil {
		return Critique{}, fmt.Errorf("critic: offline review: %w", err)
	}
	d, err := diff.ParseString(in.Diff)
	if err != nil {
		return Critique{}, fmt.Errorf("%w: %w", ErrInvalidDiff, err)
	}

	pv := provenanceOf(in.Generated)
	files := make([]*changedFile, len(d.Files))
	for i := range d.Files {
		files[i] = classify(&d.Files[i], pv)
	}
	var c collector
	for _, f := range files {
		// Rules are linear in the diff, but a huge diff still deserves to
		// be abandoned promptly when the caller gives up.
		if err := ctx.Err(); err != nil {
			return Critique{}, fmt.Errorf("critic: offline review: %w", err)
		}
		for _, rule := range fileRules {
			rule(&o.cfg, f, &c)
		}
	}
	for _, rule := range changeRules {
		rule(&o.cfg, files, &c)
	}

	all := countSeverities(c.findings)
	// Bounded per file and in total (R-BOUND-1); a file that lost a
	// finding is not complete (R-LEDGER-1).
	findings, dropped, lost := capFindings(c.findings, MaxFindingsPerFile, min(o.cfg.maxFindings, MaxFindingsTotal))
	stats := d.Stats()
	truncated := dropped > 0
	return Critique{
		Critic:     OfflineName,
		Summary:    withNotShown(summarize(stats, all, len(findings), truncated), dropped),
		Findings:   findings,
		Files:      stats.Files,
		Additions:  stats.Additions,
		Deletions:  stats.Deletions,
		Truncated:  truncated,
		NotShown:   dropped,
		Incomplete: paths(lost),
	}, nil
}

// Fingerprint implements Fingerprinter: the rules' version and the
// thresholds, what decides generated files (R-CRITIC-7), and the files
// the repository's settings ignore (ReviewIgnoring cuts them before the
// critic runs). The offline critic reads nothing else of the Input.
func (o *Offline) Fingerprint(in Input) string {
	parts := []string{OfflineName, fmt.Sprintf("%+v", o.cfg), generatedFingerprint(in.Generated)}
	if s := settingsFingerprint(in.Settings, false); s != "" {
		parts = append(parts, s)
	}
	return fingerprint(parts...)
}

// WholeChangeRules implements WholeChange: the rules in changeRules.
func (o *Offline) WholeChangeRules() []string { return []string{RuleMissingTests} }

// ReviewWholeChange implements WholeChange: the change rules on the whole
// diff.
func (o *Offline) ReviewWholeChange(ctx context.Context, in Input, d *diff.Diff) ([]Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("critic: offline review: %w", err)
	}
	pv := provenanceOf(in.Generated)
	files := make([]*changedFile, len(d.Files))
	for i := range d.Files {
		files[i] = classify(&d.Files[i], pv)
	}
	var c collector
	for _, rule := range changeRules {
		rule(&o.cfg, files, &c)
	}
	return c.findings, nil
}

// Summarize implements Summarizer: the summary Review writes, from the
// diff's counts and the findings.
func (o *Offline) Summarize(d *diff.Diff, findings []Finding, truncated bool) string {
	return summarize(d.Stats(), countSeverities(findings), len(findings), truncated)
}
