package mail

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/vote"
)

// With a reply address, each finding of the version is shown with the
// number a reply names it by — its place in Message.Findings, in both
// parts and in a rerun's sections — and the footer says what a reply
// does; the address is the message's Reply-To and is covered by its
// hash. Without one, no number and no reply line: the email is as it was.
// Rules: R-REPLY-1, R-REPLY-4.
func TestRender_ReplyToNumbersTheFindingsAReplyNames(t *testing.T) {
	r, _ := NewRenderer()
	for _, d := range []Data{firstCases()[0], rerunCases()[0], SampleData(), SampleRerunData()} {
		d.ReplyTo = "reply+key@replies.example.org"
		m, err := r.Render(d)
		if err != nil {
			t.Fatal(err)
		}
		if m.ReplyTo != d.ReplyTo || !strings.Contains(m.Text, `Reply "wrong N" or "useful N" for finding #N, "mute"`) ||
			!strings.Contains(m.HTML, "Reply to this email with <strong>wrong N</strong>") {
			t.Fatalf("%s: no Reply-To or no reply line", m.TemplateVersion)
		}
		byNumber := map[int]string{}
		for _, g := range newView(d).listedGroups() {
			for _, f := range g {
				for _, fv := range f.Findings {
					byNumber[fv.Number] = vote.FindingID(fv.Finding)
				}
			}
		}
		lines := regexp.MustCompile(`(?m)^  #([0-9]+) \[`).FindAllStringSubmatch(m.Text, -1)
		if len(lines) != len(strings.Fields(m.Findings)) || len(lines) == 0 {
			t.Fatalf("%s: %d numbered findings in the text, the message lists %d", m.TemplateVersion, len(lines), len(strings.Fields(m.Findings)))
		}
		for i, l := range lines {
			n, _ := strconv.Atoi(l[1])
			id, ok := m.Finding(n)
			if n != i+1 || !ok || id != byNumber[n] {
				t.Errorf("%s: the text's finding #%d (line %d) is not Message.Finding(%d)", m.TemplateVersion, n, i+1, n)
			}
			if !strings.Contains(m.HTML, `color:#57606a;">#`+l[1]+`</span>`) {
				t.Errorf("%s: the HTML does not number finding #%d", m.TemplateVersion, n)
			}
		}
		d2 := d
		d2.ReplyTo = "reply+other@replies.example.org"
		if m2, _ := r.Render(d2); m2.ContentSHA256 == m.ContentSHA256 {
			t.Errorf("%s: the hash does not cover the Reply-To", m.TemplateVersion)
		}
		d.ReplyTo = ""
		plain, _ := r.Render(d)
		if plain.ReplyTo != "" || strings.Contains(plain.Text, "#1 [") || strings.Contains(plain.Text+plain.HTML, "Reply ") {
			t.Errorf("%s: numbered or a reply line without a reply address", m.TemplateVersion)
		}
	}
}

// The confirmation says what each command did, in the reply's order,
// names a number the email does not list, counts what it ignored, shows
// the vocabulary when asked or when nothing was understood, and threads
// under the reply; it never holds the reader's own words.
// Rules: R-REPLY-5.
func TestRenderConfirmation_SaysWhatTheReplyDid(t *testing.T) {
	r, _ := NewRenderer()
	c := SampleConfirmation()
	c.Thread = "<CAF4hx8vJq@mail.gmail.com>"
	m, err := r.RenderConfirmation(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Finding #1 is marked wrong", "Finding #3 is marked useful", "There is no finding #12 in that email (it lists 8)",
		"Muted: you will get no more email about acme/billing#1042", "2 more commands were ignored", "1 line was not a command",
		"wrong N        finding #N is wrong"} {
		if !strings.Contains(m.Text, want) || !strings.Contains(m.HTML, escText(want)) {
			t.Errorf("confirmation lacks %q", want)
		}
	}
	if m.Subject != "Re: "+Subject(SampleData()) || m.Thread != c.Thread || m.ReplyTo != c.ReplyTo || m.TemplateVersion != ConfirmationVersion {
		t.Errorf("subject %q, thread %q, reply-to %q, version %q", m.Subject, m.Thread, m.ReplyTo, m.TemplateVersion)
	}
	if got := confirmationSubject("RE: re:  Re: [Criticizer] x"); got != "Re: [Criticizer] x" {
		t.Errorf("subject %q: Re: more than once", got)
	}
	help, _ := r.RenderConfirmation(Confirmation{ChangelistID: "cl", Subject: "s", Actions: []ReplyAction{{Verb: "help"}}})
	if !strings.HasPrefix(help.Text, "Criticizer: your reply about cl\n\nReply to a Criticizer email") {
		t.Errorf("help alone:\n%s", help.Text)
	}
	none, _ := r.RenderConfirmation(Confirmation{ChangelistID: "cl", Subject: "s", Unknown: 3})
	if !strings.Contains(none.Text, "No command was found") || !strings.Contains(none.Text, "unsubscribe    no more") {
		t.Errorf("a reply with no command is not answered with the vocabulary:\n%s", none.Text)
	}
}
