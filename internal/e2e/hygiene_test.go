package e2e

import (
	"context"
	"encoding/json"
	"github.com/criticizer/criticizer/internal/api"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// R-UNSUB-1 "List-Unsubscribe Headers (CAN-SPAM + One-Click)": "Add to
// every email: List-Unsubscribe: <https://…/unsubscribe/{token}>,
// List-Unsubscribe-Post: List-Unsubscribe=One-Click"; "POST → Empty body
// with 200/202 (one-click from email client)";  "Unsubscribe
// flows: GET returns HTML, POST returns empty 200". The next version skips
// the recipient as skipped_unsubscribed, without a send.
func TestUnsubscribe_OneClickPostEmpty200_NextVersionSkips(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := "octo/hygiene#" + strings.TrimPrefix(testenv.Prefix(t), "t")
	rcpt := []string{"ann@example.com", "bo@example.com"}

	v1 := accept(t, s, "v1-"+cl, sample(t, cl, 1, rcpt...))
	s.waitJob(v1, 30*time.Second, job.StatusSucceeded)
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 2 {
		t.Fatalf("v1: %d emails, want 2", len(emails))
	}
	var annLink string
	for _, e := range emails {
		lu, post := e.Header("List-Unsubscribe"), e.Header("List-Unsubscribe-Post")
		if !strings.HasPrefix(lu, "<http") || !strings.HasSuffix(lu, ">") || !strings.Contains(lu, "/unsubscribe/") {
			t.Fatalf("email to %v: List-Unsubscribe %q, want <URL>", e.Destination.To, lu)
		}
		if post != "List-Unsubscribe=One-Click" {
			t.Fatalf("email to %v: List-Unsubscribe-Post %q", e.Destination.To, post)
		}
		if strings.Contains(lu, "ann") || strings.Contains(lu, "example.com") {
			t.Fatalf("the unsubscribe link carries the address: %q", lu)
		}
		if e.Destination.To[0] == "ann@example.com" {
			annLink = strings.Trim(lu, "<>")
		}
	}
	u, err := url.Parse(annLink)
	if err != nil {
		t.Fatal(err)
	}

	// GET: a page asking to confirm; it unsubscribes nobody (link scanners).
	resp, body := do(t, http.MethodGet, s.srv.URL+u.Path, "", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<form") {
		t.Fatalf("GET: %d %q %.80q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// An invalid token gets the same answers (no enumeration).
	bad := s.srv.URL + "/unsubscribe/" + "djEKcl94eHgKKg.AAAAAAAAAAAAAAAAAAAAAA"
	if r2, b2 := do(t, http.MethodGet, bad, "", ""); r2.StatusCode != 200 || b2 != strings.Replace(body, u.Path, "/unsubscribe/djEKcl94eHgKKg.AAAAAAAAAAAAAAAAAAAAAA", 1) {
		t.Fatalf("GET with an invalid token: %d, a different page", r2.StatusCode)
	}
	if r2, b2 := do(t, http.MethodPost, bad, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); r2.StatusCode != 200 || b2 != "" {
		t.Fatalf("POST with an invalid token: %d %q", r2.StatusCode, b2)
	}

	// v2 before the unsubscribe reaches both.
	v2 := accept(t, s, "v2-"+cl, sample(t, cl, 2, rcpt...))
	s.waitJob(v2, 30*time.Second, job.StatusSucceeded)

	// RFC 8058 one-click, as a mail client sends it.
	resp, body = do(t, http.MethodPost, s.srv.URL+u.Path, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click")
	if resp.StatusCode != 200 || body != "" {
		t.Fatalf("one-click POST: %d %q, want 200 with an empty body", resp.StatusCode, body)
	}
	// Repeating it changes nothing and answers the same.
	if resp, body = do(t, http.MethodPost, s.srv.URL+u.Path, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); resp.StatusCode != 200 || body != "" {
		t.Fatalf("second one-click POST: %d %q", resp.StatusCode, body)
	}

	v3 := accept(t, s, "v3-"+cl, sample(t, cl, 3, rcpt...))
	view := s.waitJob(v3, 30*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second) // let any wrong send land in the store
	per := map[string]int{}
	for _, e := range emailsFor(t, s.env.SES, cl) {
		if versionOf(e) == 3 {
			per[e.Destination.To[0]]++
		}
	}
	if per["ann@example.com"] != 0 || per["bo@example.com"] != 1 {
		t.Fatalf("v3 emails %v, want only bo", per)
	}
	annV3 := delivery.ID(job.ChangelistKey("generic", cl), "ann@example.com", 3)
	for _, d := range view.Deliveries {
		if d.Recipient == api.MaskEmail("ann@example.com") && d.Status != delivery.StatusSkippedUnsubscribed {
			t.Fatalf("ann's v3 row is %q, want skipped_unsubscribed", d.Status)
		}
	}
	row, err := s.fns.Deliveries.Get(context.Background(), annV3)
	if err != nil || row.Status != delivery.StatusSkippedUnsubscribed || row.Attempts != 0 || !row.NotifiedAt.IsZero() {
		t.Fatalf("ann's v3 row %+v (%v), want skipped_unsubscribed, never attempted", row.Status, err)
	}

	// The unsubscribe is per repository: another repository still mails ann.
	other := "octo/other#" + strings.TrimPrefix(testenv.Prefix(t), "t")
	o1 := accept(t, s, "o1-"+other, sample(t, other, 1, "ann@example.com"))
	s.waitJob(o1, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, other)); n != 1 {
		t.Fatalf("another repository: %d emails to ann, want 1", n)
	}
}

// R-UNSUB-1 and R-EVIDENCE-5: "email.bounced: isPermanentBounce ?
// 'suppressed' : 'failed_transient'";  "Suppression
// handling: Suppressed delivery doesn't retry". A recorded permanent bounce,
// published the way SES publishes it (SNS topic → feedback queue), makes the
// row suppressed and the address is never mailed again; a transient bounce
// suppresses nothing.
func TestSuppression_PermanentBounceStopsLaterSends(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	rcpt := []string{"gone@example.com", "full@example.com", "ok@example.com"}
	v1 := accept(t, s, "v1-"+cl, sample(t, cl, 1, rcpt...))
	s.waitJob(v1, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 3 {
		t.Fatalf("v1: %d emails, want 3", n)
	}
	ctx := context.Background()
	clKey := job.ChangelistKey("generic", cl)
	gone, full := delivery.ID(clKey, "gone@example.com", 1), delivery.ID(clKey, "full@example.com", 1)
	snsc := s.env.Clients.SNS
	fullRow, err := s.fns.Deliveries.Get(ctx, full)
	if err != nil || fullRow.NotificationID == "" {
		t.Fatalf("full's row %+v (%v): want a provider message id", fullRow, err)
	}
	goneRow, err := s.fns.Deliveries.Get(ctx, gone)
	if err != nil || goneRow.NotificationID == "" {
		t.Fatalf("gone's row %+v (%v): want a provider message id", goneRow, err)
	}
	// Each bounce names the message SES sent for the row (an event of
	// another message would prove a duplicate send, not a bounce of this).
	for _, b := range []struct{ id, msgID, to, kind string }{
		{gone, goneRow.NotificationID, "gone@example.com", "Permanent"},
		{full, fullRow.NotificationID, "full@example.com", "Transient"},
	} {
		ev := bounceEvent(t, b.id, b.msgID, b.to, b.kind)
		if _, err := snsc.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.res.EventsTopicARN), Message: aws.String(ev)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "the permanent bounce recorded", func() bool {
		r, err := s.fns.Deliveries.Get(ctx, gone)
		return err == nil && r.Status == delivery.StatusSuppressed
	})
	// The transient bounce sends full's v1 again (the first copy never
	// arrived), once, and the job is succeeded again.
	eventually(t, 60*time.Second, "full's v1 sent again after the transient bounce", func() bool {
		r, err := s.fns.Deliveries.Get(ctx, full)
		return err == nil && !r.NotifiedAt.IsZero() && r.BounceResends == 1 && r.NotificationID != fullRow.NotificationID
	})
	s.waitJob(v1, 30*time.Second, job.StatusSucceeded)
	if n := perRecipient(emailsFor(t, s.env.SES, cl))["full@example.com"]; n != 2 {
		t.Fatalf("full got %d v1 emails, want 2 (the bounced one and the resend)", n)
	}
	// A late duplicate of that bounce (the old message id) changes nothing.
	if _, err := snsc.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.res.EventsTopicARN),
		Message: aws.String(bounceEvent(t, full, fullRow.NotificationID, "full@example.com", "Transient"))}); err != nil {
		t.Fatal(err)
	}

	v2 := accept(t, s, "v2-"+cl, sample(t, cl, 2, rcpt...))
	s.waitJob(v2, 30*time.Second, job.StatusSucceeded)
	time.Sleep(time.Second)
	per := map[string]int{}
	for _, e := range emailsFor(t, s.env.SES, cl) {
		if versionOf(e) == 2 {
			per[e.Destination.To[0]]++
		}
	}
	if per["gone@example.com"] != 0 || per["full@example.com"] != 1 || per["ok@example.com"] != 1 {
		t.Fatalf("v2 emails %v, want full and ok only", per)
	}
	if r, _ := s.fns.Deliveries.Get(ctx, full); r.BounceResends != 1 || (r.Status != delivery.StatusSent && r.Status != delivery.StatusDelivered) {
		t.Fatalf("after a duplicate of the old bounce full's row is %q with %d resends, want sent (or delivered) with 1", r.Status, r.BounceResends)
	}
	r, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, "gone@example.com", 2))
	if err != nil || r.Status != delivery.StatusSuppressed || r.SkipReason != "bounce" || r.Attempts != 0 {
		t.Fatalf("gone's v2 row %q reason %q attempts %d (%v), want suppressed by bounce, never attempted", r.Status, r.SkipReason, r.Attempts, err)
	}
	// The feedback function logs no address.
	if strings.Contains(s.logText(), "gone@example.com") {
		t.Fatal("a log line carries the suppressed address")
	}
}

// bounceEvent is SES's example Bounce record ("Examples of event data that
// Amazon SES publishes to Amazon SNS") with the delivery id tag the notifier
// sets.
func bounceEvent(t *testing.T, deliveryID, messageID, to, bounceType string) string {
	t.Helper()
	sub := "General"
	if bounceType == "Transient" {
		sub = "MailboxFull"
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	ev := map[string]any{
		"eventType": "Bounce",
		"bounce": map[string]any{
			"bounceType": bounceType, "bounceSubType": sub,
			"bouncedRecipients": []map[string]string{{"emailAddress": to, "action": "failed", "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}},
			"timestamp":         now, "feedbackId": "01000157c44f053b-61b59c11-9236-11e6-8f96-7be8aexample-000000", "reportingMTA": "dsn; mta.example.com",
		},
		"mail": map[string]any{
			"timestamp": now, "source": "Criticizer <criticizer@example.com>", "sendingAccountId": "123456789012",
			"messageId": messageID, "destination": []string{to}, "headersTruncated": false,
			"tags": map[string][]string{"delivery_id": {deliveryID}, "ses:configuration-set": {"criticizer"}},
		},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func do(t *testing.T, method, u, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
