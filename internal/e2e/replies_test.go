package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/smtp"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/inbound"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// replyDomain is the end-to-end tests' inbound domain.
const replyDomain = "replies.e2e.test"

// replyStack is a stack that receives replies over SMTP: its own
// listener, as `make run`'s.
func replyStack(t *testing.T) *stack {
	t.Helper()
	s := startStack(t, devstack.FunctionOptions{SMTP: "127.0.0.1:0"}, func(c *config.Config) { c.InboundDomain = replyDomain })
	if s.fns.Inbound == nil {
		t.Fatal("no SMTP listener")
	}
	return s
}

// reviewDiff is a changelist whose first finding (in the email's order)
// is the debug print, and a second file whose content varies by version.
func reviewDiff(debug, extra string) string {
	d := newFile("a.go", "package a", "", "import \"fmt\"", "", "func Total(sum int) int {", debug, "	return sum", "}") +
		newFile("a_test.go", "package a", "", "import \"testing\"", "", "func TestTotal(t *testing.T) {", "	if Total(2) != 2 {", "		t.Fatal(\"total\")", "	}", "}")
	if extra != "" {
		d += newFile("c.go", "package a", "", "// TODO: "+extra, "func Discount() {}")
	}
	return d
}

// postVersion posts version v of changelist cl to the recipients and
// waits for it to succeed.
func (s *stack) postVersion(cl string, v int, diff string, recipients ...string) job.ID {
	s.t.Helper()
	var m map[string]any
	_ = json.Unmarshal(sample(s.t, cl, v, recipients...), &m)
	m["diff"] = diff
	body, _ := json.Marshal(m)
	id := accept(s.t, s, fmt.Sprintf("v%d-%s", v, cl), body)
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	return id
}

// emailTo is the email of version v of cl to a recipient.
func (s *stack) emailTo(cl, to string, v int) devstack.StoredEmail {
	s.t.Helper()
	for _, e := range emailsFor(s.t, s.env.SES, cl) {
		if versionOf(e) == v && len(e.Destination.To) == 1 && e.Destination.To[0] == to {
			return e
		}
	}
	s.t.Fatalf("no v%d email to %s", v, to)
	return devstack.StoredEmail{}
}

// confirmations are the replies' confirmations to a recipient about cl.
func (s *stack) confirmations(cl, to string) []devstack.StoredEmail {
	s.t.Helper()
	all, err := s.env.SES.Emails(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	var out []devstack.StoredEmail
	for _, e := range all {
		if strings.HasPrefix(e.Subject, "Re: [Criticizer] "+cl+":") && len(e.Destination.To) == 1 && e.Destination.To[0] == to {
			out = append(out, e)
		}
	}
	return out
}

// sendReply sends a raw message over SMTP to the stack's listener, as a
// mail server relaying a reader's reply to SES would.
func (s *stack) sendReply(from, to string, msg []byte) {
	s.t.Helper()
	if err := smtp.SendMail(s.fns.Inbound.Addr(), nil, from, []string{to}, msg); err != nil {
		s.t.Fatalf("SMTP: %v", err)
	}
}

// replyTo replies to an email as its reader's mail client would.
func (s *stack) replyTo(e devstack.StoredEmail, from, text string, headers ...string) {
	s.t.Helper()
	if len(e.ReplyTo) != 1 || !strings.HasSuffix(e.ReplyTo[0], "@"+replyDomain) {
		s.t.Fatalf("the email's Reply-To is %q, want a reply address at %s", e.ReplyTo, replyDomain)
	}
	msg := devstack.ReplyMessage(from, e, text)
	for _, h := range headers {
		msg = append([]byte(h+"\r\n"), msg...)
	}
	s.sendReply(from, e.ReplyTo[0], msg)
}

// dropped counts the replies the reply function dropped for reason.
func (s *stack) dropped(reason string) int {
	return countLines(s.logText(), `"RepliesDropped":1`, `"Reason":"`+reason+`"`)
}

// A reviewer replies "wrong 1" to the critique over SMTP: SES's receipt
// (played locally: the raw message to the bucket, its notification
// through SNS to the reply queue) reaches the reply function, which
// records the vote on finding 1, the debug print, through the same
// operation as the vote link; one confirmation email arrives; the next
// version is mailed to that reviewer without the finding (saying one is
// hidden), to the other reviewer with it. The same reply delivered again
// (its notification published once more: an SQS redelivery, a redrive)
// records no second vote and sends no second confirmation.
// Rules: R-REPLY-1, R-REPLY-4, R-REPLY-5, R-REPLY-8, R-VOTE-3.
func TestReply_WrongOverSMTP_RecordedConfirmedOnceAndHidden(t *testing.T) {
	t.Parallel()
	s := replyStack(t)
	cl := strings.ReplaceAll(t.Name(), "_", "-")[:40]
	ann, bo := "ann@example.com", "bo@example.com"
	debug := `	fmt.Println("total", sum)`
	s.postVersion(cl, 1, reviewDiff(debug, ""), ann, bo)
	v1 := s.emailTo(cl, ann, 1)
	if !regexp.MustCompile(`(?m)^  #1 \[[a-z]+\].*\(debug-print\)$`).MatchString(v1.Body.Text) {
		t.Fatalf("ann's v1 does not number the debug print #1:\n%s", v1.Body.Text)
	}
	if !strings.Contains(v1.Body.Text, `Reply "wrong N" or "useful N" for finding #N`) {
		t.Errorf("ann's v1 does not say what a reply does")
	}
	s.replyTo(v1, ann, "wrong 1")
	eventually(t, 30*time.Second, "the confirmation", func() bool { return len(s.confirmations(cl, ann)) == 1 })
	c := s.confirmations(cl, ann)[0]
	if !strings.Contains(c.Body.Text, "Finding #1 is marked wrong") || c.Header("X-Criticizer-Delivery-Id") == "" {
		t.Errorf("confirmation:\n%s", c.Body.Text)
	}
	ctx := context.Background()
	votes, err := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(ctx)
	if err != nil || len(votes) != 1 || votes[0].Choice != vote.Wrong || votes[0].Rule != "debug-print" {
		t.Fatalf("votes %+v (%v), want ann's one wrong on debug-print", votes, err)
	}

	// The same reply, delivered again.
	for _, n := range s.fns.Inbound.Published() {
		if err := s.fns.Inbound.Republish(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the redelivery processed", func() bool {
		return countLines(s.logText(), `"Replies":1`, `"Outcome":"duplicate"`) == 1
	})
	time.Sleep(2 * time.Second) // a second confirmation would be queued by now; give notify its turn
	if n := len(s.confirmations(cl, ann)); n != 1 {
		t.Errorf("%d confirmations after the reply came twice, want 1", n)
	}
	if votes, _ := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(ctx); len(votes) != 1 {
		t.Errorf("%d votes after the reply came twice, want 1", len(votes))
	}

	// v2: the debug line unchanged, a change elsewhere.
	s.postVersion(cl, 2, reviewDiff(debug, "cap the discounts"), ann, bo)
	annV2, boV2 := s.emailTo(cl, ann, 2).Body.Text, s.emailTo(cl, bo, 2).Body.Text
	if strings.Contains(annV2, "(debug-print)") || !strings.Contains(annV2, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's v2 shows the finding she replied wrong to, or does not say it is hidden:\n%s", annV2)
	}
	if !strings.Contains(boV2, "(debug-print)") {
		t.Errorf("bo's v2 lacks the finding ann marked wrong:\n%s", boV2)
	}
}

// Replies that must never be acted on are dropped, counted by reason and
// never answered: a From other than the reviewer the email went to, SES
// verdicts that fail (DMARC FAIL under reject, no SPF or DKIM pass), a
// reply address whose key does not verify, and an automatic reply. No
// vote is recorded and no email is sent.
// Rules: R-REPLY-2, R-REPLY-3.
func TestReply_ForgedFailedUnknownAutomatic_DroppedNeverAnswered(t *testing.T) {
	t.Parallel()
	s := replyStack(t)
	cl := strings.ReplaceAll(t.Name(), "_", "-")[:40]
	ann := "ann@example.com"
	s.postVersion(cl, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann)
	e := s.emailTo(cl, ann, 1)

	s.replyTo(e, "mallory@example.com", "wrong 1")
	s.replyTo(e, ann, "wrong 1", devstack.VerdictsHeader+": spf=FAIL dkim=FAIL dmarc=FAIL dmarcPolicy=reject")
	s.replyTo(e, ann, "wrong 1", devstack.VerdictsHeader+": spf=FAIL dkim=FAIL dmarc=GRAY")
	forged := e
	forged.ReplyTo = []string{inbound.LocalPrefix + strings.Repeat("a", inbound.KeyLen) + "@" + replyDomain}
	s.replyTo(forged, ann, "wrong 1")
	s.replyTo(e, ann, "I am out of the office until Monday.", "Auto-Submitted: auto-replied")
	for reason, n := range map[string]int{inbound.DropForged: 1, inbound.DropDMARC: 1, inbound.DropUnauthenticated: 1, inbound.DropUnknownKey: 1, inbound.DropAutoReply: 1} {
		eventually(t, 30*time.Second, "dropped "+reason, func() bool { return s.dropped(reason) == n })
	}
	time.Sleep(2 * time.Second)
	all, _ := s.env.SES.Emails(context.Background())
	for _, m := range all {
		if strings.Contains(m.Subject, cl) && m.MessageID != e.MessageID || strings.Contains(strings.Join(m.Destination.To, ","), "mallory@") {
			t.Errorf("an email was sent for a dropped reply: %q to %v", m.Subject, m.Destination.To)
		}
	}
	if votes, _ := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(context.Background()); len(votes) != 0 {
		t.Errorf("votes %+v, want none", votes)
	}
	if strings.Contains(s.logText(), ann) || strings.Contains(s.logText(), "mallory@") {
		t.Error("an address is in the log")
	}
}

// A reviewer replies "mute": their next email about the changelist is
// not sent (its row skipped_muted, as the job's status shows), the other
// reviewer's is, and the muted reviewer's email about another changelist
// is sent as before.
// Rules: R-REPLY-7.
func TestReply_Mute_NoMoreMailAboutThatChangelist(t *testing.T) {
	t.Parallel()
	s := replyStack(t)
	cl := strings.ReplaceAll(t.Name(), "_", "-")[:40]
	ann, bo := "ann@example.com", "bo@example.com"
	s.postVersion(cl, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann, bo)
	s.replyTo(s.emailTo(cl, ann, 1), ann, "mute")
	eventually(t, 30*time.Second, "the confirmation", func() bool { return len(s.confirmations(cl, ann)) == 1 })
	if c := s.confirmations(cl, ann)[0]; !strings.Contains(c.Body.Text, "Muted: you will get no more email about "+cl) {
		t.Errorf("confirmation:\n%s", c.Body.Text)
	}
	v2 := s.postVersion(cl, 2, reviewDiff(`	fmt.Println("total", sum)`, "cap the discounts"), ann, bo)
	var view api.JobView
	s.getJSON(s.jobLink(v2), &view)
	statuses := map[string]string{}
	for _, d := range view.Deliveries {
		statuses[d.Recipient] = string(d.Status)
	}
	if statuses[api.MaskEmail(ann)] != string(delivery.StatusSkippedMuted) || statuses[api.MaskEmail(bo)] == string(delivery.StatusSkippedMuted) {
		t.Errorf("v2's rows %v: want ann skipped_muted, bo mailed", statuses)
	}
	for _, e := range emailsFor(t, s.env.SES, cl) {
		if versionOf(e) == 2 && e.Destination.To[0] == ann {
			t.Error("ann got v2 after muting the changelist")
		}
	}
	s.emailTo(cl, bo, 2)
	other := cl + "-other"
	s.postVersion(other, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann)
	s.emailTo(other, ann, 1)
}

// A reply whose From is not one mailbox SES judged is never acted on,
// whatever it says: two From fields, the reviewer's first (SES's
// notification, as the local receipt plays it, names that first one),
// and a Sender other than its From. Each says "wrong 1" and "mute":
// no confirmation is sent, no vote recorded, no mute; both are counted
// as ambiguous_from, and no address reaches the log.
// Rules: R-REPLY-2.
func TestReply_TwoFromFields_NoConfirmationNoVoteNoMute(t *testing.T) {
	t.Parallel()
	s := replyStack(t)
	cl := strings.ReplaceAll(t.Name(), "_", "-")[:40]
	ann := "ann@example.com"
	s.postVersion(cl, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann)
	e := s.emailTo(cl, ann, 1)
	msg := string(devstack.ReplyMessage(ann, e, "wrong 1\nmute"))
	if !strings.HasPrefix(msg, "From: "+ann+"\r\n") {
		t.Fatalf("the reply does not start with ann's From:\n%s", msg)
	}
	twoFroms := strings.Replace(msg, "From: "+ann+"\r\n", "From: "+ann+"\r\nFrom: Mallory <mallory@example.com>\r\n", 1)
	s.sendReply("mallory@example.com", e.ReplyTo[0], []byte(twoFroms))
	s.sendReply("mallory@example.com", e.ReplyTo[0], []byte("Sender: mallory@example.com\r\n"+msg))
	eventually(t, 30*time.Second, "both replies dropped", func() bool { return s.dropped(inbound.DropAmbiguousFrom) == 2 })
	time.Sleep(2 * time.Second) // a confirmation would be queued by now; give notify its turn
	if c := s.confirmations(cl, ann); len(c) != 0 {
		t.Errorf("%d confirmations sent for replies whose From SES did not judge", len(c))
	}
	ctx := context.Background()
	if votes, _ := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(ctx); len(votes) != 0 {
		t.Errorf("votes %+v, want none", votes)
	}
	muted, err := dynamo.NewReplies(s.env.Clients.DynamoDB, s.res.JobsTable, nil).Muted(ctx, job.ChangelistKey("generic", cl), []string{unsubscribe.RecipientID(ann)})
	if err != nil || len(muted) != 0 {
		t.Errorf("mutes %v (%v), want none", muted, err)
	}
	if strings.Contains(s.logText(), ann) || strings.Contains(s.logText(), "mallory@") {
		t.Error("an address is in the log")
	}
}

// The same reply sent twice over SMTP — a mail server that lost the
// answer to its DATA sends it again, and SES gives each receipt its own
// message id and object — is acted on once and confirmed once: one
// confirmation email, one vote; the second receipt is counted as a
// duplicate.
// Rules: R-REPLY-8.
func TestReply_SameReplySentTwice_OneConfirmation(t *testing.T) {
	t.Parallel()
	s := replyStack(t)
	cl := strings.ReplaceAll(t.Name(), "_", "-")[:40]
	ann := "ann@example.com"
	s.postVersion(cl, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann)
	e := s.emailTo(cl, ann, 1)
	msg := devstack.ReplyMessage(ann, e, "wrong 1")
	s.sendReply(ann, e.ReplyTo[0], msg)
	s.sendReply(ann, e.ReplyTo[0], msg)
	if n := s.fns.Inbound.Received(); n != 2 {
		t.Fatalf("SES received %d messages, want the reply twice", n)
	}
	eventually(t, 30*time.Second, "both receipts processed", func() bool { return countLines(s.logText(), `"Replies":1`) == 2 })
	eventually(t, 30*time.Second, "the confirmation", func() bool { return len(s.confirmations(cl, ann)) >= 1 })
	time.Sleep(2 * time.Second) // a second confirmation would be queued by now; give notify its turn
	if n := len(s.confirmations(cl, ann)); n != 1 {
		t.Errorf("%d confirmations of one reply received twice, want 1", n)
	}
	if n := countLines(s.logText(), `"Replies":1`, `"Outcome":"duplicate"`); n != 1 {
		t.Errorf("%d receipts counted as duplicates, want 1", n)
	}
	if votes, _ := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(context.Background()); len(votes) != 1 {
		t.Errorf("%d votes, want 1", len(votes))
	}
}
