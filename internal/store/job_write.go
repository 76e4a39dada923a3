package store

import "github.com/criticizer/criticizer/internal/job"

// JobWrite is what a stage writes on its job beside the stage, status and
// attempt that Advance and SetStatus move: each field is a result of the
// stage, written when it is set and left as stored when it is zero. A
// stage says what it found in these typed fields and never names a stored
// attribute; each driver maps them to its own form (the DynamoDB driver to
// attributes, jobWriteUpdate, memstore to job.Job's fields), so the
// drivers cannot disagree on a name the stage spelled
// (river's JobSetStateIfRunningParams is the model).
type JobWrite struct {
	// Diff is the diff the fetch stage stored in the blob
	Diff *StoredDiff
	// Reviewers are the version's reviewers as fetch decided them; both
	// lists are written, empty ones included (a skipped version mails
	// no one).
	Reviewers *FetchedReviewers
	// UnexpandedTeams are requested teams whose members could not be read
	// (job.Job.UnexpandedTeams).
	UnexpandedTeams []string
	// DiffBaseUnmerged: the diff is against unmerged code, a Gerrit stack
	// (job.Job.DiffBaseUnmerged, R-CRITIC-7).
	DiffBaseUnmerged bool
	// GeneratedAtBase are the files whose base version carries the
	// generated marker (job.Job.GeneratedAtBase).
	GeneratedAtBase []string
	// ContextRef names the blob holding the code around the hunks
	// (job.Job.ContextRef, R-CONTEXT-1).
	ContextRef string
	// Author is the code host's own word on the author (R-SOURCE-1).
	Author string
	// Settings are the repository's settings (job.Job.Settings).
	Settings *job.RepoSettings
	// SettingsWarnings say what of the settings was refused or did not
	// apply (job.Job.SettingsWarnings).
	SettingsWarnings []string
	// Skipped says why the version is not reviewed (job.Job.Skipped).
	Skipped string
	// TeamMembersNotMailed counts, per requested team, the members past
	// the cap (job.Job.TeamMembersNotMailed, R-REVIEWERS-6).
	TeamMembersNotMailed map[string]int
	// Critique is the llm stage's encoded critique (job.Job.Critique).
	Critique []byte
	// SkipReason says why the llm stage ran no model
	// (job.Job.SkipReason); ClearSkipReason drops it, when a review that
	// ended no_recipients is restarted.
	SkipReason      string
	ClearSkipReason bool
}

// StoredDiff is a diff in the blob store: its reference and sha256, and
// whether it was cut at the size limit.
type StoredDiff struct {
	Ref, SHA256 string
	Truncated   bool
}

// FetchedReviewers are a version's resolved addresses (job.Job.Recipients)
// and the identities of its reviewers without one ("<source>:<username>",
// read back by NoEmailReviewers).
type FetchedReviewers struct {
	Recipients, NoEmail []string
}

// Apply sets w's fields on j: the job as it reads after the write on
// either driver (memstore's whole write; storetest proves the DynamoDB
// driver's item decodes to the same). The reviewers without an address
// are not a field of job.Job: the driver keeps them beside it.
func (w JobWrite) Apply(j *job.Job) {
	if d := w.Diff; d != nil {
		j.DiffRef, j.DiffSHA256, j.DiffTruncated = d.Ref, d.SHA256, d.Truncated
	}
	if r := w.Reviewers; r != nil {
		j.Recipients = r.Recipients
	}
	if len(w.UnexpandedTeams) > 0 {
		j.UnexpandedTeams = w.UnexpandedTeams
	}
	if w.DiffBaseUnmerged {
		j.DiffBaseUnmerged = true
	}
	if len(w.GeneratedAtBase) > 0 {
		j.GeneratedAtBase = w.GeneratedAtBase
	}
	if w.ContextRef != "" {
		j.ContextRef = w.ContextRef
	}
	if w.Author != "" {
		j.Author = w.Author
	}
	if w.Settings != nil {
		s := *w.Settings
		j.Settings = &s
	}
	if len(w.SettingsWarnings) > 0 {
		j.SettingsWarnings = w.SettingsWarnings
	}
	if w.Skipped != "" {
		j.Skipped = w.Skipped
	}
	if len(w.TeamMembersNotMailed) > 0 {
		j.TeamMembersNotMailed = w.TeamMembersNotMailed
	}
	if w.Critique != nil {
		j.Critique = w.Critique
	}
	switch {
	case w.ClearSkipReason:
		j.SkipReason = ""
	case w.SkipReason != "":
		j.SkipReason = w.SkipReason
	}
}
