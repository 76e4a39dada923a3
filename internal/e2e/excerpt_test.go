package e2e

import (
	"context"
	"encoding/json"
	stdhtml "html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// genericBody is the sample webhook of changelist cl at version v, to
// recipients, with diff and the extra fields set.
func genericBody(t *testing.T, cl string, v int, diff string, extra map[string]any, recipients ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sample(t, cl, v, recipients...), &m); err != nil {
		t.Fatal(err)
	}
	m["diff"] = diff
	for k, x := range extra {
		m[k] = x
	}
	b, _ := json.Marshal(m)
	return b
}

// The text and HTML parts of a critique show, next to each finding on a
// line, the flagged line's code and the lines around it, read from the
// stored diff by the llm stage and stored with the critique; a diff line
// holding <script> is shown escaped, and its URL is no link. A generic
// caller's repository is kept on the job, shown by GET /jobs/{id} and in
// the email beside the changelist id; a bad one is a 400 naming the field.
// Rules: R-MAIL-5, R-MAIL-2, R-INTAKE-7.
func TestCritique_CodeAtEachLineFinding_ScriptEscaped(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	reader := "reader@example.com"
	diff := newFile("web/page.go", "package web", "", "import \"fmt\"", "", "func Render() {",
		`	fmt.Println("<script>alert(1)</script> https://evil.example/x")`, "	return", "}") +
		newFile("web/page_test.go", "package web", "", "import \"testing\"", "", "func TestRender(t *testing.T) { Render() }")
	if resp, b := s.post("bad-"+cl, genericBody(t, cl, 1, diff, map[string]any{"repository": "acme/web#7"}, reader)); resp.StatusCode != 400 ||
		!strings.Contains(string(b), `"field":"repository"`) {
		t.Fatalf("a bad repository: %d %s, want 400 naming the field", resp.StatusCode, b)
	}
	id := accept(t, s, "k-"+cl, genericBody(t, cl, 1, diff, map[string]any{"repository": "acme/web"}, reader))
	v := s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	if v.Repository != "acme/web" {
		t.Errorf("GET /jobs shows repository %q, want acme/web", v.Repository)
	}
	j, err := s.fns.Jobs.Get(context.Background(), id)
	if err != nil || j.Repository != "acme/web" {
		t.Fatalf("job in DynamoDB: repository %q (%v)", j.Repository, err)
	}
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 1 {
		t.Fatalf("%d emails, want 1", len(emails))
	}
	e := emails[0]
	flagged := `    > +    fmt.Println("<script>alert(1)</script> hxxps[:]//evil[.]example/x")`
	code := regexp.MustCompile(`\(debug-print\)\n(?:      [ +-].*\n){0,2}` + regexp.QuoteMeta(flagged) + `\n`)
	if !code.MatchString(e.Body.Text) {
		t.Errorf("the text part does not show the flagged line's code under the finding:\n%s", e.Body.Text)
	}
	if !strings.Contains(e.Body.Text, "      +func Render() {\n") || !strings.Contains(e.Body.Text, "Criticizer review: "+cl+" (acme/web) version 1\n") {
		t.Errorf("the text part lacks the lines around it or the repository:\n%s", e.Body.Text)
	}
	html := e.Body.HTML
	if strings.Contains(html, "<script>") || !strings.Contains(html, "fmt.Println(&#34;&lt;script&gt;alert(1)&lt;/script&gt; hxxps[:]//evil[.]example/x&#34;)") {
		t.Errorf("the HTML part does not show the <script> line escaped and defanged")
	}
	i, k := strings.Index(html, "debug-print</span>"), strings.Index(html, "fmt.Println(&#34;&lt;script")
	if i < 0 || k < i || k-i > 2000 {
		t.Errorf("the HTML part's code is not under its finding (finding at %d, code at %d)", i, k)
	}
	if !strings.Contains(html, "acme/web &middot; "+cl+" &middot; version 1") {
		t.Errorf("the HTML part does not name the repository beside the changelist")
	}
	for _, a := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if strings.Contains(a[1], "evil") {
			t.Errorf("anchor to %s", a[1])
		}
	}
	if plain := stdhtml.UnescapeString(html); strings.Contains(plain, "https://evil.example") {
		t.Error("the code's URL is live in the HTML part")
	}
}

// A reader on daily delivery answers their digest "wrong N", N numbering
// the second changelist's finding across the digest: the reply function
// records the vote on that changelist's version row, as the finding's
// Wrong link would, the confirmation names the changelist, and the next
// day's digest shows that changelist's next version without the finding,
// saying one is hidden; the first changelist's is untouched.
// Rules: R-DIGEST-6, R-VOTE-3, R-REPLY-5.
func TestDigest_ReplyWrongN_RecordedOnThatChangelistsVersion(t *testing.T) {
	t.Parallel()
	clock := &digestClock{}
	s := digestStack(t, clock, devstack.FunctionOptions{SMTP: "127.0.0.1:0"}, func(c *config.Config) { c.InboundDomain = replyDomain })
	if s.fns.Inbound == nil {
		t.Fatal("no SMTP listener")
	}
	ctx := context.Background()
	p := testenv.Prefix(t)
	dana := "dana-" + p + "@example.com"
	s.choose(dana, prefs.Daily)
	first, second := p+"-a", p+"-b"
	debug := `	fmt.Println("total", sum)`
	for _, cl := range []string{first, second} {
		s.waitJob(accept(t, s, "k-"+cl, genericBody(t, cl, 1, reviewDiff(debug, ""), nil, dana)), 60*time.Second, job.StatusSucceeded)
	}
	digestOf := func(n int) devstack.StoredEmail {
		t.Helper()
		clock.nextDay()
		s.sweepUntil(30*time.Second, "digest "+strconv.Itoa(n), func() bool { return len(digests(t, s, dana)) == n })
		return digests(t, s, dana)[n-1]
	}
	d := digestOf(1)
	if len(d.ReplyTo) != 1 || !strings.HasSuffix(d.ReplyTo[0], "@"+replyDomain) || !strings.Contains(d.Body.Text, `Reply "wrong N" or "useful N" for finding #N`) {
		t.Fatalf("the digest has no reply address (%q) or does not say what a reply does:\n%s", d.ReplyTo, d.Body.Text)
	}
	section := d.Body.Text[strings.Index(d.Body.Text, "== "+second+" version 1 =="):]
	m := regexp.MustCompile(`(?m)^  #(\d+) \[warning\].*\(debug-print\)$`).FindStringSubmatch(section)
	if m == nil || m[1] == "1" {
		t.Fatalf("the second changelist's debug print is not numbered after the first's:\n%s", d.Body.Text)
	}
	s.replyTo(d, dana, "wrong "+m[1])
	eventually(t, 30*time.Second, "the confirmation", func() bool { return len(replies(t, s, dana)) == 1 })
	if c := replies(t, s, dana)[0]; !strings.Contains(c.Body.Text, "Finding #"+m[1]+" is marked wrong: your later emails about "+second) {
		t.Errorf("confirmation:\n%s", c.Body.Text)
	}
	votes, err := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(ctx)
	want := delivery.ID(job.ChangelistKey("generic", second), dana, 1)
	if err != nil || len(votes) != 1 || votes[0].DeliveryID != want || votes[0].Choice != vote.Wrong || votes[0].Rule != "debug-print" {
		t.Fatalf("votes %+v (%v); want one wrong on %s's version row", votes, err, second)
	}
	marks, err := dynamo.NewDismissals(s.env.Clients.DynamoDB, s.res.JobsTable, nil).Marks(ctx, job.ChangelistKey("generic", second), []string{unsubscribe.RecipientID(dana)})
	if err != nil || len(marks[unsubscribe.RecipientID(dana)]) != 1 {
		t.Fatalf("marks on %s: %v (%v)", second, marks, err)
	}
	// Day two: both changelists' next versions, the debug line unchanged.
	for _, cl := range []string{first, second} {
		s.waitJob(accept(t, s, "k2-"+cl, genericBody(t, cl, 2, reviewDiff(debug, "cap the discounts"), nil, dana)), 60*time.Second, job.StatusSucceeded)
	}
	text := digestOf(2).Body.Text
	a, b := text[strings.Index(text, "== "+first+" version 2 =="):], text[strings.Index(text, "== "+second+" version 2 =="):]
	if strings.Index(a, "== "+second) > 0 {
		a = a[:strings.Index(a, "== "+second)]
	}
	if strings.Index(b, "== "+first) > 0 {
		b = b[:strings.Index(b, "== "+first)]
	}
	if !strings.Contains(a, "(debug-print)") || strings.Contains(b, "(debug-print)") || !strings.Contains(b, "1 finding you marked wrong is hidden") {
		t.Errorf("day two's digest: %s should show its debug print, %s hide it and say so:\n%s", first, second, text)
	}
}

// digests are the daily digests mailed to rcpt, oldest first.
func digests(t *testing.T, s *stack, rcpt string) []devstack.StoredEmail {
	var out []devstack.StoredEmail
	for _, e := range mailTo(t, s, rcpt) {
		if strings.HasPrefix(e.Subject, "[Criticizer] Daily digest for ") {
			out = append(out, e)
		}
	}
	return out
}

// replies are the reply confirmations mailed to rcpt.
func replies(t *testing.T, s *stack, rcpt string) []devstack.StoredEmail {
	var out []devstack.StoredEmail
	for _, e := range mailTo(t, s, rcpt) {
		if strings.HasPrefix(e.Subject, "Re: ") {
			out = append(out, e)
		}
	}
	return out
}

// A reader whose own minimum severity is warning is not mailed a quiet
// version whose only news is an info finding: their row is settled
// skipped_nothing_new, as a rerun with nothing new is, while a reader
// without that minimum is mailed it. The job's status shows it.
// Rules: R-QUIET-2, R-PREF-3.
func TestQuiet_ReadersMinimumSeverity_NothingNewAtItIsNotMailed(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, quietly(0))
	cl := testenv.Prefix(t)
	ann, bo := "ann-"+cl+"@example.com", "bo-"+cl+"@example.com"
	p := prefs.Default()
	p.MinSeverity = prefs.SeverityWarning
	if _, err := s.fns.Recipients.SavePreferences(context.Background(), unsubscribe.RecipientID(ann), p); err != nil {
		t.Fatal(err)
	}
	debug := `	fmt.Println("total", sum)`
	quiet := map[string]any{"quiet": true}
	s.waitJob(accept(t, s, "v1-"+cl, genericBody(t, cl, 1, reviewDiff(debug, ""), quiet, ann, bo)), 30*time.Second, job.StatusSucceeded)
	eventually(t, 20*time.Second, "v1 to both", func() bool { return len(emailsFor(t, s.env.SES, cl)) == 2 })
	// v2 adds a TODO (an info finding) and nothing else.
	v := s.waitJob(accept(t, s, "v2-"+cl, genericBody(t, cl, 2, reviewDiff(debug, "cap the discounts"), quiet, ann, bo)), 30*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second) // a send to ann would be in the store by now
	got := perRecipient(emailsFor(t, s.env.SES, cl))
	if got[ann] != 1 || got[bo] != 2 {
		t.Errorf("emails %v; want ann v1 only, bo v1 and v2", got)
	}
	var annRow *api.DeliveryView
	for i, d := range v.Deliveries {
		if d.Recipient == api.MaskEmail(ann) {
			annRow = &v.Deliveries[i]
		}
	}
	if annRow == nil || annRow.Status != delivery.StatusSkippedNothingNew || !strings.Contains(annRow.SkipReason, "nothing new since v1") {
		t.Errorf("ann's v2 row %+v; want skipped_nothing_new since v1", annRow)
	}
	if e := s.emailTo(cl, bo, 2); !strings.Contains(e.Body.Text, "(todo-added)") {
		t.Errorf("bo's v2 lacks its new TODO finding:\n%s", e.Body.Text)
	}
}
