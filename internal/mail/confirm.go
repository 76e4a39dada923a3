package mail

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
)

// ConfirmationVersion names the confirmation of a reply (R-REPLY-5): one
// short email that says what the reply did.
const ConfirmationVersion = "reply-confirmation/v1"

// ReplyAction is one command of a reply as it was carried out.
type ReplyAction struct {
	// Verb is the command: wrong, useful, mute, unsubscribe or help.
	Verb string
	// Finding is the finding's number for wrong and useful; Listed
	// whether the email lists it (a number past them did nothing).
	Finding int
	Listed  bool
	// Changelist is the changelist of the finding a daily digest numbers
	// (R-DIGEST-6); empty: the confirmation's.
	Changelist string
}

// Confirmation is what the confirmation of a reply says.
type Confirmation struct {
	// ChangelistID is the changelist the answered email is about; for a
	// daily digest, what it is ("the daily digest for 2026-11-28").
	ChangelistID string
	// Digest: the answered email is a daily digest, about several
	// changelists: "mute" names none (R-DIGEST-6).
	Digest bool
	// Subject is the answered email's subject; the confirmation's is
	// "Re: " and it.
	Subject string
	// Actions are the reply's commands, in order.
	Actions []ReplyAction
	// Findings is how many findings the answered email lists.
	Findings int
	// Ignored counts commands past the limit of one reply; Unknown the
	// lines that were not commands.
	Ignored, Unknown int
	// Thread is the reply's Message-ID, sent as In-Reply-To and
	// References so the confirmation threads under it; ReplyTo the reply
	// address the reader wrote to, so a reply to the confirmation acts on
	// the same email; ListID the deploy's list id. Empty: no such header.
	Thread, ReplyTo, ListID string
}

// replyHelp is the vocabulary, one command a line (docs/email.md).
var replyHelp = []string{
	"wrong N        finding #N is wrong: your later emails about the changelist leave it out while its line is unchanged",
	"useful N       finding #N was useful (and shows again if you had marked it wrong)",
	"mute           no more email about this changelist to you",
	"unsubscribe    no more Criticizer email to you at all",
	"help           this list",
}

// sentences are the confirmation's lines, the same in both parts.
func (c Confirmation) sentences() (lines []string, help bool) {
	cl := c.ChangelistID
	for _, a := range c.Actions {
		n := strconv.Itoa(a.Finding)
		switch {
		case (a.Verb == "wrong" || a.Verb == "useful") && !a.Listed:
			lines = append(lines, "There is no finding #"+n+" in that email ("+pick(c.Findings == 0, "it lists none", "it lists "+strconv.Itoa(c.Findings))+"): nothing recorded.")
		case a.Verb == "wrong":
			about := cl
			if a.Changelist != "" {
				about = a.Changelist
			}
			lines = append(lines, "Finding #"+n+" is marked wrong: your later emails about "+about+" leave it out while its line is unchanged.")
		case a.Verb == "mute" && c.Digest:
			lines = append(lines, "Nothing muted: a digest is about several changelists. Reply \"mute\" to a changelist's own email, or mute its repository on your preference page.")
		case a.Verb == "useful":
			lines = append(lines, "Finding #"+n+" is marked useful. Thank you.")
		case a.Verb == "mute":
			lines = append(lines, "Muted: you will get no more email about "+cl+".")
		case a.Verb == "unsubscribe":
			lines = append(lines, "Unsubscribed: you will get no more Criticizer email.")
		case a.Verb == "help":
			help = true
		}
	}
	if c.Ignored > 0 {
		lines = append(lines, strconv.Itoa(c.Ignored)+" more "+pick(c.Ignored == 1, "command was", "commands were")+" ignored: a reply acts on at most 10.")
	}
	if len(c.Actions) == 0 {
		lines = append(lines, "No command was found in your reply.")
		help = true
	} else if c.Unknown > 0 {
		lines = append(lines, strconv.Itoa(c.Unknown)+" "+pick(c.Unknown == 1, "line was", "lines were")+" not a command and did nothing.")
	}
	return lines, help
}

// confirmationSubject is "Re: " and the answered email's subject, once.
func confirmationSubject(s string) string {
	for {
		t := strings.TrimSpace(s)
		if len(t) >= 3 && strings.EqualFold(t[:3], "re:") {
			s = t[3:]
			continue
		}
		return "Re: " + t
	}
}

// RenderConfirmation renders the confirmation of a reply: a few lines,
// text and HTML, with nothing the reader wrote in them (their lines are
// counted, not echoed) and nothing a model wrote.
func (r *Renderer) RenderConfirmation(c Confirmation) (delivery.Message, error) {
	lines, help := c.sentences()
	var t, h strings.Builder
	t.WriteString("Criticizer: your reply about " + c.ChangelistID + "\n\n")
	for _, l := range lines {
		t.WriteString("- " + l + "\n")
	}
	if help {
		if len(lines) > 0 {
			t.WriteString("\n")
		}
		t.WriteString("Reply to a Criticizer email with one command a line:\n\n")
		for _, l := range replyHelp {
			t.WriteString("  " + l + "\n")
		}
	}
	t.WriteString("\n--\nThis answers your reply to Criticizer's email about " + c.ChangelistID + " (" + ConfirmationVersion + ").\n")

	h.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Your reply about ` + escText(c.ChangelistID) + `</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;table-layout:fixed;background:#ffffff;border:1px solid #d0d7de;border-radius:6px;border-collapse:separate;">
<tr><td style="padding:20px 24px 8px;font-size:12px;line-height:1.4;color:#57606a;overflow-wrap:anywhere;"><span style="font-weight:600;color:#1f2328;">Criticizer</span> &middot; your reply about ` + escText(c.ChangelistID) + `</td></tr>
<tr><td style="padding:4px 24px 8px;font-size:14px;line-height:1.55;overflow-wrap:anywhere;word-break:break-word;">`)
	for _, l := range lines {
		h.WriteString(`
  <p style="margin:8px 0 0;">` + escText(l) + `</p>`)
	}
	if help {
		h.WriteString(`
  <p style="margin:14px 0 0;">Reply to a Criticizer email with one command a line:</p>
  <pre style="margin:8px 0 0;padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:12px;line-height:1.5;white-space:pre-wrap;">`)
		for i, l := range replyHelp {
			if i > 0 {
				h.WriteString("\n")
			}
			h.WriteString(escText(l))
		}
		h.WriteString(`</pre>`)
	}
	h.WriteString(`
</td></tr>
<tr><td style="padding:14px 24px 18px;border-top:1px solid #d0d7de;background:#f6f8fa;border-radius:0 0 6px 6px;font-size:12px;line-height:1.5;color:#57606a;">This answers your reply to Criticizer's email about ` + escText(c.ChangelistID) + ` &middot; ` + ConfirmationVersion + `.</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`)
	m := delivery.Message{
		Subject: confirmationSubject(c.Subject), HTML: h.String(), Text: t.String(), TemplateVersion: ConfirmationVersion,
		Thread: c.Thread, ListID: ListIDValue(c.ListID), ReplyTo: c.ReplyTo,
	}
	sum := sha256.Sum256([]byte(m.Subject + "\x00" + m.HTML + "\x00" + m.Text + "\x00" + m.Thread + "\x00" + m.ListID + "\x00" + m.ReplyTo))
	m.ContentSHA256 = hex.EncodeToString(sum[:])
	return m, nil
}
