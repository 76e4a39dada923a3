package mail

// The pages of the vote endpoint (R-VOTE-1). A GET of a vote link answers
// VotePage, whose one button POSTs the vote: mail scanners fetch every
// link in a message, so a GET never records anything. Nothing on these
// pages comes from the finding or the model: the choice is one of two
// words of ours.

// VoteVersion names the vote endpoint's page for GET, VotedVersion the
// page a recorded vote answers (previewed with the others).
const (
	VoteVersion  = "vote/v1"
	VotedVersion = "voted/v1"
)

// VotePage is the page a vote link answers for GET: one button that
// records choice ("useful" or "wrong") by POSTing to action (the link
// itself).
func (r *Renderer) VotePage(action, choice string) ([]byte, error) {
	label, say := "Mark this finding as useful", "Tell Criticizer this finding was useful."
	if choice == "wrong" {
		label, say = "Mark this finding as wrong", "Tell Criticizer this finding was wrong or not worth your time."
	}
	return []byte(page("Criticizer: your vote on a finding", "Your vote on a finding", `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">`+say+
		` One vote per finding: a later click replaces an earlier one.</p>
  <form method="post" action="`+escURL(action)+`" style="margin:18px 0 0;">
    <button type="submit" name="confirm" value="1" style="font:inherit;font-size:14px;padding:8px 16px;margin:4px 8px 4px 0;border:1px solid #1f6feb;border-radius:6px;background:#1f6feb;color:#ffffff;cursor:pointer;">`+label+`</button>
  </form>`)), nil
}

// VotedPage is the page a recorded vote answers.
func (r *Renderer) VotedPage(choice string) ([]byte, error) {
	return []byte(page("Criticizer: thank you", "Thank you", `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">Your vote is recorded: this finding was `+
		pick(choice == "wrong", "wrong", "useful")+`. Votes are counted per rule, so the reviews can be measured against what their readers found useful and improved where they were wrong.</p>
  <p style="margin:12px 0 0;font-size:14px;line-height:1.55;color:#57606a;">You can close this page. To change your vote, use the other link under the same finding in the email: your latest choice is the one counted, once, however many times you click.</p>`)), nil
}

// VoteRefusedPage is the page a link that does not verify, or has
// expired, answers.
func (r *Renderer) VoteRefusedPage(expired bool) ([]byte, error) {
	return []byte(page("Criticizer: link not valid", pick(expired, "This link has expired", "This link is not valid"), `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">`+
		pick(expired, "Vote links work for 30 days after the email was sent.", "The link may have been cut or changed on its way; try it from the email again.")+
		` Nothing was recorded.</p>`)), nil
}
