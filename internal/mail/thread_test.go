package mail_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
)

var threadKey = strings.Repeat("k", 32)

// The conversation root of a changelist and a recipient is one message
// id, the same whatever renders it (another instance, another spelling of
// the address), different for another changelist, recipient or key; it
// is a valid msg-id under the sender's domain and names neither the
// address nor the changelist.
// Rules: R-THREAD-1.
func TestThreads_OneRootPerChangelistAndRecipient_DisclosesNeither(t *testing.T) {
	a, b := mail.NewThreads(threadKey, "reviews.example.org"), mail.NewThreads(threadKey, "reviews.example.org")
	root := a.Root("generic:billing-1042", "ana.lopez@example.com")
	if !regexp.MustCompile(`^<criticizer\.t\.[0-9a-f]{32}@reviews\.example\.org>$`).MatchString(root) {
		t.Fatalf("root %q is not <criticizer.t.HEX@domain>", root)
	}
	if got := b.Root("generic:billing-1042", "  Ana.Lopez@Example.COM "); got != root {
		t.Errorf("another instance, another spelling of the address: %q, want %q", got, root)
	}
	for _, leak := range []string{"ana", "lopez", "billing", "1042", "generic"} {
		if strings.Contains(root, leak) {
			t.Errorf("root %q discloses %q", root, leak)
		}
	}
	others := map[string]string{
		"another changelist": a.Root("generic:billing-1043", "ana.lopez@example.com"),
		"another recipient":  a.Root("generic:billing-1042", "bo@example.com"),
		"another key":        mail.NewThreads(strings.Repeat("j", 32), "reviews.example.org").Root("generic:billing-1042", "ana.lopez@example.com"),
		"no key":             mail.NewThreads("", "reviews.example.org").Root("generic:billing-1042", "ana.lopez@example.com"),
	}
	for what, got := range others {
		if got == root || got == "" {
			t.Errorf("%s: root %q; want one of its own", what, got)
		}
	}
	var none *mail.Threads
	if got := none.Root("generic:x", "a@example.com"); got != "" {
		t.Errorf("nil Threads: %q, want no root", got)
	}
	if s := fmt.Sprintf("%v %+v %#v", a, a, *a); strings.Contains(s, threadKey) {
		t.Errorf("printing Threads shows the key: %s", s)
	}
}

// headers renders d and returns the filing headers it is sent with.
func headers(t *testing.T, d mail.Data) (delivery.Message, map[string]string) {
	t.Helper()
	m, err := renderer(t).Render(d)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, h := range mail.FilingHeaders(m) {
		if _, dup := out[h.Name]; dup {
			t.Errorf("header %s twice", h.Name)
		}
		out[h.Name] = h.Value
	}
	return m, out
}

// thread groups messages into conversations the two ways mail clients do:
// "references", as RFC 5322 clients do (JWZ threading: messages that name
// a common ancestor in References are one conversation, the ancestor
// present or not), and "gmail", which also wants the same subject once
// Re:/Fwd: prefixes are dropped. It returns each message's conversation.
func thread(msgs []map[string]string, subjects []string, gmail bool) []int {
	conv := make([]int, len(msgs))
	for i := range msgs {
		conv[i] = i
		for j := 0; j < i; j++ {
			shared := false
			for _, id := range strings.Fields(msgs[i]["References"]) {
				shared = shared || slicesContains(strings.Fields(msgs[j]["References"]), id) || id == msgs[j]["In-Reply-To"]
			}
			if shared && (!gmail || subjects[i] == subjects[j]) {
				conv[i] = conv[j]
				break
			}
		}
	}
	return conv
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Versions 1, 2 and 3 of a changelist to one reviewer are one
// conversation by References alone and by Gmail's subject-and-references
// rule; another reviewer's copies are another conversation, another
// changelist's another. A title edited between versions keeps the
// References conversation and starts a new one in Gmail, as GitHub's own
// emails do (docs/email.md).
// Rules: R-THREAD-1.
func TestThreading_VersionsOneConversation_ReferencesAndGmail(t *testing.T) {
	th := mail.NewThreads(threadKey, "reviews.example.org")
	type email struct {
		cl, rcpt, title string
		v               int
	}
	emails := []email{
		{"billing-1042", "ana@example.com", "Add refunds", 1},
		{"billing-1042", "bo@example.com", "Add refunds", 1},
		{"billing-1042", "ana@example.com", "Add refunds", 2},
		{"billing-1043", "ana@example.com", "Add refunds", 1},
		{"billing-1042", "ana@example.com", "Add refunds", 3},
		{"billing-1042", "bo@example.com", "Add refunds", 2},
		{"billing-1042", "ana@example.com", "Add refunds and credits", 4},
	}
	var hs []map[string]string
	var subjects []string
	for _, e := range emails {
		d := sampleData()
		d.ChangelistID, d.Title, d.ReviewVersion = e.cl, e.title, e.v
		d.Thread = th.Root("generic:"+e.cl, e.rcpt)
		m, h := headers(t, d)
		if h["References"] != d.Thread || h["In-Reply-To"] != d.Thread {
			t.Fatalf("v%d to %s: References %q, In-Reply-To %q; want the root %q on both", e.v, e.rcpt, h["References"], h["In-Reply-To"], d.Thread)
		}
		hs, subjects = append(hs, h), append(subjects, m.Subject)
	}
	for _, gmail := range []bool{false, true} {
		c := thread(hs, subjects, gmail)
		if c[0] != c[2] || c[0] != c[4] {
			t.Errorf("gmail=%t: ana's v1, v2 and v3 are conversations %d, %d, %d; want one", gmail, c[0], c[2], c[4])
		}
		if c[1] != c[5] || c[1] == c[0] {
			t.Errorf("gmail=%t: bo's v1 and v2 are %d and %d, ana's %d; want bo's one, not ana's", gmail, c[1], c[5], c[0])
		}
		if c[3] == c[0] {
			t.Errorf("gmail=%t: another changelist joined ana's conversation", gmail)
		}
		if renamed := c[6] == c[0]; renamed == gmail {
			t.Errorf("gmail=%t: after a title edit, same conversation = %t", gmail, renamed)
		}
	}
}

// The filing headers of a rendered message: the conversation root as
// References and In-Reply-To, List-Id in RFC 2919's form, Auto-Submitted:
// auto-generated (RFC 3834) and Exchange's suppression of automatic
// replies (never of delivery reports), why the recipient got it, and the
// highest severity of the findings — none without findings, info for a
// severity a critic made up. The footer says the reason in words. The
// hash covers them: another reason is another payload.
// Rules: R-MAIL-4, R-THREAD-1.
func TestRender_FilingHeaders_ListAutoSubmittedReasonSeverity(t *testing.T) {
	d := sampleData()
	d.Thread = mail.NewThreads(threadKey, "reviews.example.org").Root("generic:billing-1042", "ana@example.com")
	d.ListID, d.Reason = "criticizer.reviews.example.org", mail.ReasonAdded
	m, got := headers(t, d)
	want := map[string]string{
		"References":               d.Thread,
		"In-Reply-To":              d.Thread,
		"List-Id":                  "Criticizer <criticizer.reviews.example.org>",
		"Auto-Submitted":           "auto-generated",
		"X-Auto-Response-Suppress": "OOF, AutoReply",
		"X-Criticizer-Reason":      "added",
		"X-Criticizer-Severity":    "error",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("headers %v\nwant %v", got, want)
	}
	for reason, words := range map[string]string{
		mail.ReasonAdded:    "because you were added as a reviewer of billing-1042.",
		mail.ReasonAuthor:   "because you are the author of billing-1042.",
		mail.ReasonReviewer: "because you are a reviewer of billing-1042.",
	} {
		d.Reason = reason
		other, _ := headers(t, d)
		if !strings.Contains(other.Text, words) || !strings.Contains(other.HTML, words) {
			t.Errorf("reason %s: the footer does not say %q", reason, words)
		}
		if reason != mail.ReasonAdded && other.ContentSHA256 == m.ContentSHA256 {
			t.Errorf("reason %s: the same content hash as reason added", reason)
		}
	}

	for _, tc := range []struct {
		severities []critic.Severity
		want       string
	}{
		{nil, "none"},
		{[]critic.Severity{critic.SeverityInfo}, "info"},
		{[]critic.Severity{"nitpick"}, "info"},
		{[]critic.Severity{critic.SeverityInfo, critic.SeverityWarning}, "warning"},
		{[]critic.Severity{critic.SeverityWarning, critic.SeverityError, critic.SeverityInfo}, "error"},
	} {
		d := sampleData()
		d.Critique.Findings = nil
		for i, s := range tc.severities {
			d.Critique.Findings = append(d.Critique.Findings, critic.Finding{File: "a.go", Line: i + 1, Severity: s, Rule: "r", Message: "m"})
		}
		if _, h := headers(t, d); h["X-Criticizer-Severity"] != tc.want {
			t.Errorf("findings %v: severity %q, want %q", tc.severities, h["X-Criticizer-Severity"], tc.want)
		}
	}

	// A row rendered before these headers existed still says it is
	// machine-written, and nothing else.
	old := mail.FilingHeaders(delivery.Message{Subject: "s", HTML: "h", Text: "t"})
	if len(old) != 2 || old[0].Name != "Auto-Submitted" || old[1].Name != "X-Auto-Response-Suppress" {
		t.Errorf("an old row's filing headers: %v", old)
	}
}
