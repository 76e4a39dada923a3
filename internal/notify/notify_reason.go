package notify

import (
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
)

// reason says why a recipient is mailed a version (mail.ReasonHeader,
// R-MAIL-4): the change's author when the author is named by the address
// mailed (the generic webhook may name both by address; a code review
// system's author is a username, and reviewers.Select leaves the author
// out); a reviewer added after the version's reviewers were fetched
// (R-REVIEWERS-1); otherwise a reviewer the version was fetched with, or
// the generic webhook listed.
func reason(j job.Job, recipient string) string {
	rcpt := delivery.NormalizeRecipient(recipient)
	if rcpt == delivery.NormalizeRecipient(j.Author) {
		return mail.ReasonAuthor
	}
	for _, r := range j.Recipients {
		if delivery.NormalizeRecipient(r) == rcpt {
			return mail.ReasonReviewer
		}
	}
	for _, r := range j.AddedRecipients {
		if delivery.NormalizeRecipient(r) == rcpt {
			return mail.ReasonAdded
		}
	}
	return mail.ReasonReviewer
}
