package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// TestSignedWebhook_OneEmailPerRecipient_ReplaySendsNothing is the
// walking skeleton end to end: a signed webhook becomes exactly one email per
// recipient; posting it again returns the identical response and sends
// nothing.
//
// R-INTAKE-1: "Duplicate idempotency_key submissions MUST return the
// originally created job record and MUST NOT create a second job."
func TestSignedWebhook_OneEmailPerRecipient_ReplaySendsNothing(t *testing.T) {
	s := startStack(t, devstack.FunctionOptions{Pollers: 2})
	cl := testenv.Prefix(t)
	body := sample(t, cl, 1, "ann@example.com", "bo@example.org", "cy@example.net")

	resp, first := s.post("key-"+cl, body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %s", resp.StatusCode, first)
	}
	var acc api.Accepted
	if err := json.Unmarshal(first, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.JobID == "" || acc.Status != "accepted" || acc.ChangelistID != cl || acc.ReviewVersion != 1 || acc.Links.Self != s.jobLink(acc.JobID) {
		t.Fatalf("unexpected 202 body: %s", first)
	}

	eventually(t, 30*time.Second, "one email per recipient", func() bool {
		return len(emailsFor(t, s.env.SES, cl)) >= 3
	})
	var job api.JobView
	eventually(t, 10*time.Second, "job succeeded", func() bool {
		s.getJSON(acc.Links.Self, &job)
		return job.Status == "succeeded"
	})
	for _, d := range job.Deliveries {
		if (d.Status != "sent" && d.Status != "delivered") || d.NotifiedAt == nil || d.Attempts != 1 {
			t.Errorf("delivery %+v: want sent once with notified_at", d)
		}
		if strings.Contains(d.Recipient, "ann@") || !strings.Contains(d.Recipient, "***@") {
			t.Errorf("GET /jobs shows an unmasked address: %q", d.Recipient)
		}
	}

	// Provider evidence flows back: SES events (locally from the event
	// bridge) through the feedback queue mark each row delivered.
	eventually(t, 10*time.Second, "delivery events recorded", func() bool {
		s.getJSON(acc.Links.Self, &job)
		for _, d := range job.Deliveries {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})

	emails := emailsFor(t, s.env.SES, cl)
	got := perRecipient(emails)
	for _, r := range []string{"ann@example.com", "bo@example.org", "cy@example.net"} {
		if got[r] != 1 {
			t.Errorf("%s got %d emails, want 1", r, got[r])
		}
	}
	e := emails[0]
	if !strings.Contains(e.Subject, cl+": ") || versionOf(e) != 1 || e.Body.HTML == "" || e.Body.Text == "" {
		t.Errorf("email lacks a subject naming the changelist, a body naming the version, or a body: %+v", e)
	}
	if e.Header("X-Criticizer-Delivery-Id") == "" {
		t.Error("email lacks the delivery id header")
	}
	for _, want := range []string{"TODO", "debug output", "test file"} {
		if !strings.Contains(strings.ToLower(e.Body.Text), strings.ToLower(want)) {
			t.Errorf("critique text does not mention %q:\n%s", want, e.Body.Text)
		}
	}

	// The same request again: the same status and body, byte for byte, and
	// no new email.
	resp2, second := s.post("key-"+cl, body)
	if resp2.StatusCode != http.StatusAccepted || string(second) != string(first) {
		t.Fatalf("replay: status %d body %s; want 202 %s", resp2.StatusCode, second, first)
	}
	if resp2.Header.Get("Idempotent-Replayed") != "true" {
		t.Error("replay lacks Idempotent-Replayed: true")
	}
	time.Sleep(2 * time.Second)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 3 {
		t.Fatalf("after the replay the store holds %d emails for the changelist, want 3", n)
	}
}

// TestIntake_BadInput_ClearErrorsAndNothingCreated: a bad signature is 401,
// a reused key with another body 422, malformed JSON or an invalid field 400
// naming the field; none creates a job or an email.
// Rules: R-INTAKE-4.
func TestIntake_BadInput_ClearErrorsAndNothingCreated(t *testing.T) {
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	body := sample(t, cl, 1)

	cases := []struct {
		name       string
		key        string
		body       []byte
		sig        string
		wantStatus int
		wantField  string
	}{
		{"missing signature", "k1", body, "", 401, ""},
		{"wrong signature", "k1", body, webhook.Sign([]byte("wrong"), body), 401, ""},
		{"missing key", "", body, webhook.Sign([]byte(secret), body), 400, "Idempotency-Key"},
		{"malformed json", "k2", []byte(`{"changelist_id":`), webhook.Sign([]byte(secret), []byte(`{"changelist_id":`)), 400, "body"},
		{"bad version", "k3", []byte(`{"changelist_id":"x","review_version":0}`), webhook.Sign([]byte(secret), []byte(`{"changelist_id":"x","review_version":0}`)), 400, "review_version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := s.postSigned(c.key, c.body, c.sig)
			if resp.StatusCode != c.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, c.wantStatus)
			}
			var p api.Problem
			if err := json.Unmarshal(b, &p); err != nil || p.Message == "" {
				t.Fatalf("body is not a JSON problem: %s", b)
			}
			if p.Field != c.wantField {
				t.Errorf("field %q, want %q", p.Field, c.wantField)
			}
		})
	}

	// A key reused with a different body is refused and changes nothing.
	resp, _ := s.post("reuse-"+cl, body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first post: %d", resp.StatusCode)
	}
	resp, b := s.post("reuse-"+cl, sample(t, cl, 2))
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("reused key: status %d (%s), want 422", resp.StatusCode, b)
	}
	out, err := s.env.Clients.DynamoDB.Scan(t.Context(), scanJobs(s.res.JobsTable))
	if err != nil {
		t.Fatal(err)
	}
	if jobs := countKind(out.Items, "job"); jobs != 1 {
		t.Fatalf("%d jobs in the table, want 1 (bad requests must create nothing)", jobs)
	}
}
