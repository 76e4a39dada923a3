package inbound

import (
	"net/mail"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func hdr(lines ...string) mail.Header {
	m, err := mail.ReadMessage(strings.NewReader(strings.Join(lines, "\r\n") + "\r\n\r\nbody"))
	if err != nil {
		panic(err)
	}
	return m.Header
}

func notification(spf, dkim, dmarc, policy, spam, virus, source string) Notification {
	v := func(s string) events.SimpleEmailVerdict { return events.SimpleEmailVerdict{Status: s} }
	return Notification{NotificationType: "Received",
		Receipt: events.SimpleEmailReceipt{SPFVerdict: v(spf), DKIMVerdict: v(dkim), DMARCVerdict: v(dmarc), DMARCPolicy: policy,
			SpamVerdict: v(spam), VirusVerdict: v(virus)},
		Mail: events.SimpleEmailMessage{Source: source, MessageID: "m1"}}
}

// A reply is acted on only when SES's verdicts authenticate its From,
// aligned with the From's domain, and the From is the delivery's
// recipient: DMARC PASS; or, without a DMARC verdict to lean on, SPF on
// the envelope sender's domain or DKIM signed by the From's domain (or a
// parent). A DMARC FAIL under quarantine or reject, spam or a virus, an
// unaligned pass, or another From is dropped.
// Rules: R-REPLY-2.
func TestAuthenticated_VerdictsAndAlignment(t *testing.T) {
	from := hdr("From: Ann Reviewer <Ann@Example.COM>")
	signed := func(d ...string) mail.Header {
		lines := []string{"From: ann@example.com"}
		for _, x := range d {
			lines = append(lines, "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d="+x+"; s=s1; h=from:to; bh=abc=; b=def=")
		}
		return hdr(lines...)
	}
	for name, tc := range map[string]struct {
		n    Notification
		h    mail.Header
		want string
		rcpt string
	}{
		"dmarc pass":                             {notification(Pass, Pass, Pass, "", Pass, Pass, "bounce@example.com"), from, "", ""},
		"dmarc pass, spf and dkim of others":     {notification(Fail, Gray, Pass, "", Pass, Pass, "x@elsewhere.net"), from, "", ""},
		"no dmarc, spf aligned":                  {notification(Pass, Gray, Gray, "", Pass, Pass, "prvs=144d0cba7=ann@example.com"), from, "", ""},
		"no dmarc, spf of a parent":              {notification(Pass, Gray, Gray, "", Pass, Pass, "b@example.com"), hdr("From: ann@mail.example.com"), "", "ann@mail.example.com"},
		"no dmarc, spf of a subdomain":           {notification(Pass, Gray, Gray, "", Pass, Pass, "b@mail.example.com"), from, DropUnauthenticated, ""},
		"no dmarc, spf of another domain":        {notification(Pass, Gray, Gray, "", Pass, Pass, "attacker@evil.example"), from, DropUnauthenticated, ""},
		"no dmarc, dkim aligned":                 {notification(Fail, Pass, Gray, "", Pass, Pass, "x@evil.example"), signed("example.com"), "", ""},
		"no dmarc, dkim of another domain":       {notification(Fail, Pass, Gray, "", Pass, Pass, "x@evil.example"), signed("evil.example"), DropUnauthenticated, ""},
		"no dmarc, one dkim not aligned":         {notification(Fail, Pass, Gray, "", Pass, Pass, "x@evil.example"), signed("example.com", "evil.example"), DropUnauthenticated, ""},
		"no dmarc, dkim pass but unsigned":       {notification(Fail, Pass, Gray, "", Pass, Pass, "x@evil.example"), from, DropUnauthenticated, ""},
		"dmarc fail, policy none, spf unaligned": {notification(Pass, Fail, Fail, "none", Pass, Pass, "x@evil.example"), from, DropUnauthenticated, ""},
		"dmarc fail, policy quarantine":          {notification(Pass, Pass, Fail, "quarantine", Pass, Pass, "ann@example.com"), from, DropDMARC, ""},
		"dmarc fail, policy reject":              {notification(Pass, Pass, Fail, "REJECT", Pass, Pass, "ann@example.com"), from, DropDMARC, ""},
		"nothing passes":                         {notification(Fail, Fail, Gray, "", Pass, Pass, "ann@example.com"), from, DropUnauthenticated, ""},
		"processing failed":                      {notification(ProcessingFailed, ProcessingFailed, ProcessingFailed, "", Pass, Pass, "ann@example.com"), from, DropUnauthenticated, ""},
		"spam":                                   {notification(Pass, Pass, Pass, "", Fail, Pass, "ann@example.com"), from, DropSpam, ""},
		"virus":                                  {notification(Pass, Pass, Pass, "", Pass, Fail, "ann@example.com"), from, DropVirus, ""},
		"another from":                           {notification(Pass, Pass, Pass, "", Pass, Pass, "bo@example.com"), hdr("From: bo@example.com"), DropForged, ""},
		"two froms":                              {notification(Pass, Pass, Pass, "", Pass, Pass, "ann@example.com"), hdr("From: ann@example.com, bo@example.com"), DropAmbiguousFrom, ""},
		"no from":                                {notification(Pass, Pass, Pass, "", Pass, Pass, "ann@example.com"), hdr("To: x@y.z"), DropForged, ""},
	} {
		rcpt := tc.rcpt
		if rcpt == "" {
			rcpt = "ann@example.com"
		}
		tc.n.Mail.CommonHeaders.From = tc.h["From"] // what SES read as the From
		if got := Authenticated(tc.n, tc.h, rcpt); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

// An automatic reply is never answered: RFC 3834's Auto-Submitted,
// Precedence bulk/junk/list/auto_reply, X-Autoreply, a null envelope
// sender, or our own List-Id coming back. A person's reply is none.
// Rules: R-REPLY-3.
func TestLoop_AutomaticRepliesAreDropped(t *testing.T) {
	const list = "criticizer.reviews.example.org"
	for name, tc := range map[string]struct {
		h        mail.Header
		envelope string
		want     string
	}{
		"a person":                    {hdr("From: ann@example.com", "Auto-Submitted: no"), "ann@example.com", ""},
		"quoting our list in a reply": {hdr("From: ann@example.com", "Subject: Re: x"), "ann@example.com", ""},
		"vacation responder":          {hdr("From: ann@example.com", "Auto-Submitted: auto-replied"), "ann@example.com", DropAutoReply},
		"auto-generated":              {hdr("From: ann@example.com", "Auto-Submitted: auto-generated (failure)"), "ann@example.com", DropAutoReply},
		"precedence bulk":             {hdr("From: ann@example.com", "Precedence: bulk"), "ann@example.com", DropAutoReply},
		"precedence junk":             {hdr("From: ann@example.com", "Precedence: Junk"), "ann@example.com", DropAutoReply},
		"precedence list":             {hdr("From: ann@example.com", "Precedence: list"), "ann@example.com", DropAutoReply},
		"precedence auto_reply":       {hdr("From: ann@example.com", "Precedence: auto_reply"), "ann@example.com", DropAutoReply},
		"x-autoreply":                 {hdr("From: ann@example.com", "X-Autoreply: yes"), "ann@example.com", DropAutoReply},
		"null sender":                 {hdr("From: ann@example.com"), "", DropAutoReply},
		"null sender brackets":        {hdr("From: ann@example.com"), "<>", DropAutoReply},
		"our own list id":             {hdr("From: ann@example.com", "List-Id: Criticizer <"+list+">"), "ann@example.com", DropLoop},
		"another list id":             {hdr("From: ann@example.com", "List-Id: Other <dev.example.org>"), "ann@example.com", ""},
	} {
		if got := Loop(tc.h, tc.envelope, list); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

// A reply is from one mailbox, the one SES judged: one From field (in any
// case, "From :" counted as RFC 5322's obsolete syntax reads it) holding
// one mailbox, no Sender but that mailbox, and SES's commonHeaders.from
// that one mailbox. Anything else is ambiguous_from, whatever the
// verdicts say; no From at all, or one that is no address, is forged.
// Rules: R-REPLY-2.
func TestFrom_OneMailboxTheOneSESJudged(t *testing.T) {
	pass := notification(Pass, Pass, Pass, "", Pass, Pass, "ann@example.com")
	judged := func(from ...string) Notification {
		n := pass
		n.Mail.CommonHeaders.From = from
		return n
	}
	ann := "Ann Reviewer <ann@example.com>"
	for name, tc := range map[string]struct {
		n    Notification
		h    mail.Header
		want string
	}{
		"one from, judged":                {judged(ann), hdr("From: " + ann), ""},
		"case and display name differ":    {judged("ann@example.com"), hdr("FROM: \"Reviewer, Ann\" <Ann@Example.com>"), ""},
		"a sender that is the from":       {judged(ann), hdr("From: "+ann, "Sender: ann@example.com"), ""},
		"a name in an unknown charset":    {judged(ann), hdr("From: =?iso-2022-jp?B?GyRCJUYlOSVIGyhC?= <ann@example.com>"), ""},
		"two from fields":                 {judged(ann), hdr("From: "+ann, "From: Mallory <mallory@example.com>"), DropAmbiguousFrom},
		"two from fields, other first":    {judged("mallory@example.com"), hdr("From: mallory@example.com", "From: "+ann), DropAmbiguousFrom},
		"a second from in another case":   {judged(ann), hdr("From: "+ann, "fROM: mallory@example.com"), DropAmbiguousFrom},
		"a second, obsolete from":         {judged(ann), hdr("From: "+ann, "From : mallory@example.com"), DropAmbiguousFrom},
		"two mailboxes in one from":       {judged(ann, "mallory@example.com"), hdr("From: " + ann + ", mallory@example.com"), DropAmbiguousFrom},
		"a group":                         {judged(ann), hdr("From: team: ann@example.com, mallory@example.com;"), DropAmbiguousFrom},
		"an empty group":                  {judged(ann), hdr("From: undisclosed-recipients:;"), DropAmbiguousFrom},
		"a sender other than the from":    {judged(ann), hdr("From: "+ann, "Sender: mallory@example.com"), DropAmbiguousFrom},
		"two senders":                     {judged(ann), hdr("From: "+ann, "Sender: ann@example.com", "Sender: mallory@example.com"), DropAmbiguousFrom},
		"a sender that is no address":     {judged(ann), hdr("From: "+ann, "Sender: nobody"), DropAmbiguousFrom},
		"ses judged another from":         {judged("mallory@example.com"), hdr("From: " + ann), DropAmbiguousFrom},
		"ses judged two":                  {judged(ann, "mallory@example.com"), hdr("From: " + ann), DropAmbiguousFrom},
		"ses judged none":                 {judged(), hdr("From: " + ann), DropAmbiguousFrom},
		"ses judged something unreadable": {judged("<<>>"), hdr("From: " + ann), DropAmbiguousFrom},
		"no from":                         {judged(ann), hdr("Sender: " + ann), DropForged},
		"a from that is no address":       {judged(ann), hdr("From: Ann Reviewer"), DropForged},
	} {
		addr, why := From(tc.n, tc.h)
		if why != tc.want || (why == "" && addr != "ann@example.com") {
			t.Errorf("%s: %q %q, want %q", name, addr, why, tc.want)
		}
		// Whatever the verdicts say, the reply is not acted on.
		if got := Authenticated(tc.n, tc.h, "ann@example.com"); got != tc.want {
			t.Errorf("%s: Authenticated %q, want %q", name, got, tc.want)
		}
	}
}
