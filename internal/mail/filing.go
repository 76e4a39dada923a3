package mail

import (
	"github.com/criticizer/criticizer/internal/delivery"
)

// The headers a reader's mail filters sort on, and the conversation's
// (R-MAIL-4, R-THREAD-1). Their values are rendered with the message
// (delivery.Message: Thread, ListID, Reason, Severity) and stored with the
// row, so a retry sends the same headers as the first attempt; the sender
// turns them into headers (FilingHeaders).
const (
	// ReferencesHeader and InReplyToHeader name the recipient's
	// conversation root (Threads.Root) on every email of a changelist.
	ReferencesHeader = "References"
	InReplyToHeader  = "In-Reply-To"
	// ListIDHeader identifies the deploy's mail as one list (RFC 2919),
	// the handle of a "this list" filter: "Criticizer <LIST-ID>".
	ListIDHeader = "List-Id"
	// AutoSubmittedHeader marks the email as written by a machine (RFC
	// 3834): filters can sort on it, and a vacation responder that honours
	// it does not answer.
	AutoSubmittedHeader = "Auto-Submitted"
	AutoSubmittedValue  = "auto-generated"
	// AutoResponseSuppressHeader is Exchange's and Outlook's own way of
	// saying the same, which they heed where they ignore Auto-Submitted:
	// no out-of-office or other automatic reply. Delivery reports are not
	// suppressed: bounces are how SES keeps the list clean.
	AutoResponseSuppressHeader = "X-Auto-Response-Suppress"
	AutoResponseSuppressValue  = "OOF, AutoReply"
	// ReasonHeader says why this person got the email (Reason* values), as
	// GitHub's X-GitHub-Reason does.
	ReasonHeader = "X-Criticizer-Reason"
	// SeverityHeader is the highest severity among the critique's
	// findings: error, warning, info, or none.
	SeverityHeader = "X-Criticizer-Severity"
)

// Why a recipient is mailed (ReasonHeader).
const (
	// ReasonReviewer: a reviewer the version's reviewers were fetched with
	// (or, for the generic webhook, one it listed).
	ReasonReviewer = "reviewer"
	// ReasonAuthor: the change's author, named by the address mailed.
	ReasonAuthor = "author"
	// ReasonAdded: a reviewer added to the version after its reviewers were
	// fetched (R-REVIEWERS-1).
	ReasonAdded = "added"
)

// SeverityNone is SeverityHeader's value for a critique without findings.
const SeverityNone = "none"

// ListIDPhrase is the display name of the List-Id header.
const ListIDPhrase = "Criticizer"

// ListIDValue is the List-Id header value of a list id (config's
// CRITICIZER_LIST_ID): "Criticizer <id>", or "" for no id.
func ListIDValue(id string) string {
	if id == "" {
		return ""
	}
	return ListIDPhrase + " <" + id + ">"
}

// why is the footer's reason the recipient is mailed, before the
// changelist's id: what X-Criticizer-Reason says, in words.
func why(reason string) string {
	switch reason {
	case ReasonAuthor:
		return "you are the author of"
	case ReasonAdded:
		return "you were added as a reviewer of"
	}
	return "you are a reviewer of"
}

// highestSeverity is SeverityHeader's value: the most severe finding's
// severity, counted as the email's counters count them (anything a critic
// wrote that is neither error nor warning is info).
func highestSeverity(c Counts) string {
	switch {
	case c.Errors != 0:
		return "error"
	case c.Warnings != 0:
		return "warning"
	case c.Infos != 0:
		return "info"
	}
	return SeverityNone
}

// Header is one message header.
type Header struct{ Name, Value string }

// FilingHeaders are the headers a rendered message is sent with besides
// the delivery id and the unsubscribe headers: the conversation's, the
// list's, Auto-Submitted and its Exchange twin, the reason and the
// severity. A value the message does not have is left out (a row rendered
// before these existed has none of them); Auto-Submitted is always there,
// as every Criticizer email is written by a machine.
func FilingHeaders(m delivery.Message) []Header {
	var hs []Header
	add := func(name, value string) {
		if value != "" {
			hs = append(hs, Header{name, value})
		}
	}
	add(ReferencesHeader, m.Thread)
	add(InReplyToHeader, m.Thread)
	add(ListIDHeader, m.ListID)
	add(AutoSubmittedHeader, AutoSubmittedValue)
	add(AutoResponseSuppressHeader, AutoResponseSuppressValue)
	add(ReasonHeader, m.Reason)
	add(SeverityHeader, m.Severity)
	return hs
}
