package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/store"
)

// The attributes a JobWrite sets on the job item, job.Job's dynamodbav
// names, and the two kept beside job.Job.
const (
	attrDiffRef              = "diff_ref"
	attrDiffSHA256           = "diff_sha256"
	attrDiffTruncated        = "diff_truncated"
	attrRecipients           = "recipients"
	attrNoEmailReviewers     = "no_email_reviewers"
	attrUnexpandedTeams      = "unexpanded_teams"
	attrDiffBaseUnmerged     = "diff_base_unmerged"
	attrGeneratedAtBase      = "generated_at_base"
	attrContextRef           = "context_ref"
	attrAuthor               = "author"
	attrRepoSettings         = "repo_settings"
	attrSettingsWarnings     = "settings_warnings"
	attrSkipped              = "skipped"
	attrTeamMembersNotMailed = "team_members_not_mailed"
	attrCritique             = "critique"
	attrJobSkipReason        = "skip_reason"
)

// jobWriteUpdate adds w's fields to a job item's update: the DynamoDB
// driver's only mapping of a stage's results to attributes. Each value
// is encoded as job.Job encodes its field, so Get reads back what Apply
// sets.
func jobWriteUpdate(upd expression.UpdateBuilder, w store.JobWrite) expression.UpdateBuilder {
	set := func(name string, v any) { upd = upd.Set(expression.Name(name), expression.Value(v)) }
	if d := w.Diff; d != nil {
		set(attrDiffRef, d.Ref)
		set(attrDiffSHA256, d.SHA256)
		if d.Truncated {
			set(attrDiffTruncated, true)
		} else {
			// Absent reads as false (omitempty), and costs no bytes.
			upd = upd.Remove(expression.Name(attrDiffTruncated))
		}
	}
	if r := w.Reviewers; r != nil {
		set(attrRecipients, r.Recipients)
		set(attrNoEmailReviewers, r.NoEmail)
	}
	if len(w.UnexpandedTeams) > 0 {
		set(attrUnexpandedTeams, w.UnexpandedTeams)
	}
	if w.DiffBaseUnmerged {
		set(attrDiffBaseUnmerged, true)
	}
	if len(w.GeneratedAtBase) > 0 {
		set(attrGeneratedAtBase, w.GeneratedAtBase)
	}
	if w.ContextRef != "" {
		set(attrContextRef, w.ContextRef)
	}
	if w.Author != "" {
		set(attrAuthor, w.Author)
	}
	if w.Settings != nil {
		set(attrRepoSettings, stored[repoSettingsRecord](*w.Settings))
	}
	if len(w.SettingsWarnings) > 0 {
		set(attrSettingsWarnings, w.SettingsWarnings)
	}
	if w.Skipped != "" {
		set(attrSkipped, w.Skipped)
	}
	if len(w.TeamMembersNotMailed) > 0 {
		set(attrTeamMembersNotMailed, w.TeamMembersNotMailed)
	}
	if w.Critique != nil {
		set(attrCritique, w.Critique)
	}
	switch {
	case w.ClearSkipReason:
		upd = upd.Remove(expression.Name(attrJobSkipReason))
	case w.SkipReason != "":
		set(attrJobSkipReason, w.SkipReason)
	}
	return upd
}
