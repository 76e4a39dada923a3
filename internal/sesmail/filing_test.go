package sesmail_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesmail"
)

// env is a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// longestDomain is a sender domain of config.MaxMailDomainLen characters.
func longestDomain() string {
	label := strings.Repeat("d", 62)
	d := strings.Join([]string{label, label, label, label}, ".") // 251
	return d + ".x"
}

// Under the longest sender domain and list id config accepts, and the
// longest unsubscribe URL, every header SES is given keeps SES's rules:
// at most 15 of them, each name once, names of 1–126 printable ASCII
// characters without a colon, values of 1–870 printable ASCII characters;
// and the conversation root, List-Id, Auto-Submitted, reason and severity
// reach SES as rendered.
// Rules: R-LIMIT-2, R-MAIL-4, R-THREAD-1.
func TestFilingHeaders_LongestFitSESHeaderLimits(t *testing.T) {
	domain := longestDomain()
	if len(domain) != config.MaxMailDomainLen {
		t.Fatalf("domain of %d characters; want %d", len(domain), config.MaxMailDomainLen)
	}
	listID := strings.Repeat("l", config.MaxListIDLen-len(".x")) + ".x"
	cfg, err := config.FromEnv(env(map[string]string{config.EnvMailFrom: "Criticizer <c@" + domain + ">", config.EnvListID: listID}))
	if err != nil {
		t.Fatalf("config refuses the longest domain and list id: %v", err)
	}
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Render(mail.Data{ChangelistID: "cl", ReviewVersion: 1, Title: "t", URL: "https://x.example/1", Author: "a",
		Thread: mail.NewThreads(strings.Repeat("k", 32), cfg.MailDomain).Root("generic:cl", "rcpt@example.com"),
		ListID: cfg.ListID, Reason: mail.ReasonReviewer})
	if err != nil {
		t.Fatal(err)
	}
	m.UnsubscribeURL = "https://x.example/u/" + strings.Repeat("t", config.MaxSESHeaderValue-len("<https://x.example/u/>"))
	hs := sentHeaders(t, m)
	if len(hs) > config.MaxSESHeaders {
		t.Errorf("%d headers, SES takes %d", len(hs), config.MaxSESHeaders)
	}
	name := regexp.MustCompile(`^[!-9;-~]{1,126}$`)
	value := regexp.MustCompile(`^[ -~]{1,870}$`)
	got := map[string]string{}
	for _, h := range hs {
		if !name.MatchString(h.Name) {
			t.Errorf("header name %q breaks SES's rule", h.Name)
		}
		if !value.MatchString(h.Value) {
			t.Errorf("header %s: a %d-character value breaks SES's rule", h.Name, len(h.Value))
		}
		k := strings.ToLower(h.Name)
		if _, dup := got[k]; dup {
			t.Errorf("header %s given twice", h.Name)
		}
		got[k] = h.Value
	}
	for name, want := range map[string]string{
		"references": m.Thread, "in-reply-to": m.Thread, "list-id": "Criticizer <" + listID + ">",
		"auto-submitted": "auto-generated", "x-criticizer-reason": "reviewer", "x-criticizer-severity": "none",
	} {
		if got[name] != want || want == "" || (name == "references" && !strings.HasSuffix(want, "@"+domain+">")) {
			t.Errorf("%s: %q reached SES; want %q", name, got[name], want)
		}
	}
}

// A header value SES would refuse (a line break, a byte outside printable
// ASCII, over 870 characters) is a bug, never sent: SES would refuse the
// whole send, and a line break could add a header of the attacker's.
// Rules: R-LIMIT-2.
func TestSender_RefusesAFilingHeaderSESWouldRefuse(t *testing.T) {
	s := sesmail.NewSender(nil, "criticizer@example.com", "") // never reaches SES
	for _, m := range []delivery.Message{
		{Reason: "reviewer\r\nBcc: victim@example.com"},
		{ListID: "Criticizer <caf\u00e9.example>"},
		{Thread: "<" + strings.Repeat("t", config.MaxSESHeaderValue) + "@x>"},
	} {
		m.Subject, m.HTML, m.Text = "s", "h", "t"
		_, err := s.Send(context.Background(), "d_bad", "rcpt@example.com", m)
		if err == nil {
			t.Errorf("message %+v sent", m)
			continue
		}
		if c := retry.Classify(err); c.Class.Retryable() {
			t.Errorf("error %v is retryable (%s)", err, c.Class)
		}
	}
}
