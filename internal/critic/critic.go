package critic

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/job"
)

// Input is what a critic reviews.
type Input struct {
	ChangelistID  string
	ReviewVersion int
	Title         string
	Author        string
	URL           string
	// Description is the pull request's (merge request's, change's)
	// description: untrusted, sent to a model as data.
	Description string
	Diff        string // unified diff text

	// Previous is the review of an earlier version of the changelist that
	// this one may build on; nil for a first review. Only Incremental
	// reads it: other critics review Diff whole whatever it says.
	Previous *Previous
	// Fresh asks Incremental to review every file again and carry no
	// finding over (an operator's rerun); the comparison with Previous is
	// still made.
	Fresh bool
	// Partial reports that Diff was cut at a file boundary (the fetch
	// stage's size limit): a file of Previous that is missing from Diff
	// may lie past the cut, so its findings are not called resolved.
	Partial bool

	// Settings are the repository's .criticizer.yaml at the base of the
	// reviewed version (R-REPO-1, R-REPO-6); nil: defaults. ReviewIgnoring cuts the files they
	// ignore; the LLM critic sends their instructions for the files it
	// sends, as the repository's notes inside the data, and asks for the
	// critique in their language; both critics' fingerprints include what
	// they read of them.
	Settings *job.RepoSettings

	// Generated says which files are machine-written beyond what the diff
	// shows of the base (R-CRITIC-7): the deployment's globs and what the
	// fetch stage read of the base. A file the change alone calls
	// generated is reviewed.
	Generated Generated

	// Unwanted are the rules the team's accepted learnings leave out of
	// the repository's reviews (R-LEARN-2): the model is told the team
	// does not want them, after the prompt's cacheable prefix; whatever a
	// critic still reports of them is left out by LeaveOutLearned.
	Unwanted []string

	// Head holds changed files as the version's head commit has them
	// (the fetch stage reads them from GitHub, GitLab or Gerrit): the LLM
	// critic shows the model the code around each hunk from them, as
	// context it may not cite (R-CONTEXT-1); nil or a missing file: the
	// hunks alone, as before. The offline critic ignores it.
	Head HeadFiles
}

// Previous is an earlier version's review: its version number and its
// critique as stored on its job.
type Previous struct {
	Version  int
	Critique Critique
}

// Critique is a critic's verdict on one Input. Its JSON form is what is
// stored and rendered, so field names are part of the contract.
type Critique struct {
	Critic    string    `json:"critic"`    // which critic and version produced it, e.g. "offline/v1"
	Summary   string    `json:"summary"`   // 1–3 plain-English sentences
	Findings  []Finding `json:"findings"`  // sorted by file, line, rule; never nil
	Files     int       `json:"files"`     // files changed by the diff
	Additions int       `json:"additions"` // lines added by the diff
	Deletions int       `json:"deletions"` // lines removed by the diff
	Truncated bool      `json:"truncated"` // findings were capped, or not everything was reviewed
	// Omitted are the files a model did not read, and why.
	Omitted []Omitted `json:"omitted,omitempty"`
	// Cut: the model's answer stopped at its length limit; the findings
	// are those it completed.
	Cut bool `json:"cut,omitempty"`
	// Capped: the model reported as many findings as it was allowed
	// (or more): it may have stopped before it got to some of the files
	// it was sent, so none of them counts as reviewed (R-LEDGER-1).
	Capped bool `json:"capped,omitempty"`
	// NotShown counts the findings left out of Findings by the bounds of
	// R-BOUND-1 (per file, in total, in bytes); the summary ends with a
	// sentence saying how many.
	NotShown int `json:"not_shown,omitempty"`
	// LearnedOut counts the findings the team's accepted learnings left
	// out of Findings (R-LEARN-2, LeaveOutLearned); the email says how
	// many.
	LearnedOut int `json:"learned_out,omitempty"`
	// Incomplete are files the critic read but whose findings a cap cut:
	// their review is not complete (R-LEDGER-1). Read by Incremental in
	// the same process, never stored.
	Incomplete []string `json:"-"`
	// Context is what the code around the hunks added to a model's
	// prompt (R-CONTEXT-1, R-CONTEXT-2); nil when none was shown.
	Context *ContextUsage `json:"context,omitempty"`
	// Usage is the model tokens the review was billed for: in a review
	// that carried findings over (Changes.Carried), only those of the
	// files sent.
	Usage *Usage `json:"usage,omitempty"`
	// Ledger records which files this review covers and under which
	// critic and instructions, so that the next version's review can
	// carry their findings over (Incremental); nil from a critic that is
	// not wrapped by Incremental.
	Ledger *Ledger `json:"ledger,omitempty"`
	// Changes compares the findings with those of the previous reviewed
	// version; nil when there is none to compare with (a first review, or
	// the previous one was made by another critic or under other
	// instructions), and the email then says nothing about changes.
	Changes *Changes `json:"changes,omitempty"`
}

// Critic reviews a change. Implementations must be safe for concurrent use,
// because one Lambda instance may review several changes at once.
//
// The llm stage uses the critic named by CRITICIZER_CRITIC (internal/wire/llm):
// Offline (offline, the default), or LLM over a Model: critic/bedrock
// (bedrock, with CRITICIZER_BEDROCK_MODEL_ID; its SDK client makes one
// attempt per call, the stage runner retrying) or critic/openai (openai,
// with CRITICIZER_OPENAI_BASE_URL, CRITICIZER_OPENAI_MODEL and
// CRITICIZER_OPENAI_API_KEY).
type Critic interface {
	Review(ctx context.Context, in Input) (Critique, error)
}

// ErrInvalidDiff is wrapped by Review when Input.Diff cannot be parsed.
// Retrying cannot fix that, so callers use errors.Is to treat it as a
// permanent (schema) failure rather than a transient one.
var ErrInvalidDiff = errors.New("critic: invalid diff")
