package outhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/outhook"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/safehttp"
)

const vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type got struct {
	header http.Header
	body   []byte
}

func receiver(t *testing.T, status int) (*httptest.Server, *[]got) {
	t.Helper()
	var mu sync.Mutex
	var seen []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, got{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func hook(t *testing.T, url string, now func() time.Time, client *http.Client) *outhook.Hook {
	t.Helper()
	if client == nil {
		client = safehttp.NewClient(safehttp.Policy{AllowPrivate: true, Ports: []int{0}}, 5*time.Second)
	}
	h, err := outhook.New(outhook.Destination{Name: "chat", URL: url, Secret: vectorSecret}, client, now)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The published Standard Webhooks test vector: the id, timestamp and body
// of the specification's example, signed with its secret, give its
// signature; the headers are the specification's.
// Rules: R-CHANNEL-8.
func TestHook_SignsTheSpecificationsTestVector(t *testing.T) {
	srv, seen := receiver(t, http.StatusNoContent)
	h := hook(t, srv.URL, func() time.Time { return time.Unix(1614265330, 0) }, nil)
	p := channel.Post{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Body: []byte(`{"test": 2432232314}`)}
	rec, err := h.Send(context.Background(), p, channel.Receipt{})
	if err != nil || rec.Ref != p.ID {
		t.Fatalf("send = %+v %v", rec, err)
	}
	g := (*seen)[0]
	if s := g.header.Get("webhook-signature"); s != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %q", s)
	}
	if g.header.Get("webhook-id") != p.ID || g.header.Get("webhook-timestamp") != "1614265330" || string(g.body) != `{"test": 2432232314}` {
		t.Fatalf("headers %v body %q", g.header, g.body)
	}
}

// A message sent again carries the same webhook-id and body, with a fresh
// timestamp and signature, each verifying with the destination's secret.
// Rules: R-CHANNEL-2, R-CHANNEL-8.
func TestHook_ResendSameIDAndBody_FreshSignature(t *testing.T) {
	srv, seen := receiver(t, http.StatusOK)
	now := time.Now()
	h := hook(t, srv.URL, func() time.Time { return now }, nil)
	p := channel.Post{ID: "msg_x", Phase: channel.Finished, Outcome: channel.Reviewed, Changelist: "acme/app#7", Version: 2}
	body, err := h.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Body = body
	for i := 0; i < 2; i++ {
		if _, err := h.Send(context.Background(), p, channel.Receipt{}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(90 * time.Second)
	}
	a, b := (*seen)[0], (*seen)[1]
	if a.header.Get("webhook-id") != b.header.Get("webhook-id") || string(a.body) != string(b.body) {
		t.Fatal("a resend changed its id or body")
	}
	if a.header.Get("webhook-timestamp") == b.header.Get("webhook-timestamp") || a.header.Get("webhook-signature") == b.header.Get("webhook-signature") {
		t.Fatal("a resend kept its timestamp or signature")
	}
	wh, _ := standardwebhooks.NewWebhook(strings.TrimPrefix(vectorSecret, "whsec_"))
	for _, g := range []got{a, b} {
		if err := wh.VerifyIgnoringTimestamp(g.body, g.header); err != nil {
			t.Fatalf("receiver's verify: %v", err)
		}
	}
}

// The body: versioned, the changelist and counts, findings as plain text
// with no working link, and a Slack text in which model text can form no
// link or mention.
// Rules: R-CHANNEL-7.
func TestRender_ModelTextIsData(t *testing.T) {
	p := channel.Post{ID: "msg_y", Source: "github", Repository: "acme/app", Changelist: "acme/app#7", Version: 3, Head: "abc",
		Phase: channel.Finished, Outcome: channel.Reviewed, Counts: channel.Counts{Error: 1, Warning: 2},
		Findings: []critic.Finding{{File: "a.go", Line: 3, Severity: critic.SeverityError,
			Message: "click <https://evil.example/x|here> & tell <!channel> <@U123> see https://evil.example"}},
		JobURL: "https://crit.example/jobs/j_1?token=t"}
	raw, err := outhook.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	var b outhook.Body
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	if b.Type != "criticizer.review.finished" || b.Version != 1 || b.Changelist.ID != "acme/app#7" || b.Changelist.Version != 3 ||
		b.Counts == nil || b.Counts.Warning != 2 || b.FindingsOmitted != 2 || len(b.Findings) != 1 {
		t.Fatalf("body = %+v", b)
	}
	if strings.Contains(b.Findings[0].Message, "https://evil.example") {
		t.Fatalf("finding keeps a working link: %q", b.Findings[0].Message)
	}
	text := strings.ReplaceAll(b.Text, "<"+p.JobURL+"|status>", "")
	if strings.ContainsAny(text, "<>") || strings.Contains(text, "https://evil") {
		t.Fatalf("slack text lets model text form markup: %q", b.Text)
	}
	if !strings.Contains(b.Text, "&lt;!channel&gt;") || !strings.Contains(b.Text, "&amp;") {
		t.Fatalf("slack text = %q", b.Text)
	}
}

// A body above the bound leaves findings out, and says how many.
// Rules: R-CHANNEL-7.
func TestRender_Bounded(t *testing.T) {
	p := channel.Post{ID: "msg_z", Phase: channel.Finished, Outcome: channel.Reviewed, Counts: channel.Counts{Info: 50}}
	for i := 0; i < 50; i++ {
		p.Findings = append(p.Findings, critic.Finding{File: "a.go", Line: i, Severity: critic.SeverityInfo, Message: strings.Repeat("<", 2000)})
	}
	raw, err := outhook.Render(p)
	if err != nil || len(raw) > outhook.MaxBody {
		t.Fatalf("body of %d bytes, %v", len(raw), err)
	}
	var b outhook.Body
	_ = json.Unmarshal(raw, &b)
	if b.FindingsOmitted == 0 || len(b.Findings)+b.FindingsOmitted != 50 {
		t.Fatalf("%d findings, %d omitted", len(b.Findings), b.FindingsOmitted)
	}
}

// Answers are classified as every stage's failures are; a loopback
// destination is refused by a deployment's client.
// Rules: R-CHANNEL-8.
func TestHook_FailuresClassified_PrivateRefused(t *testing.T) {
	ctx := context.Background()
	p := channel.Post{ID: "msg_f", Body: []byte(`{}`)}
	for status, want := range map[int]retry.Class{500: retry.Upstream5xx, 429: retry.RateLimited, 400: retry.SchemaInvalid, 410: retry.NotFound} {
		srv, _ := receiver(t, status)
		_, err := hook(t, srv.URL, nil, nil).Send(ctx, p, channel.Receipt{})
		if c := retry.Classify(err).Class; c != want {
			t.Errorf("HTTP %d → %s, want %s", status, c, want)
		}
	}
	srv, seen := receiver(t, 200)
	_, err := hook(t, srv.URL+"/?token=sekrit", nil, safehttp.NewClient(safehttp.Policy{}, time.Second)).Send(ctx, p, channel.Receipt{})
	if !errors.Is(err, safehttp.ErrForbidden) || len(*seen) != 0 {
		t.Fatalf("loopback under a deployment's policy = %v (%d received)", err, len(*seen))
	}
	if strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("the error quotes the URL: %v", err)
	}
}

// The configuration: names, URLs and whsec_ secrets checked; an error
// never quotes a URL or a secret.
// Rules: R-CHANNEL-8.
func TestParse(t *testing.T) {
	ds, err := outhook.Parse(`[{"name":"chat","url":"https://hooks.example/x?k=1","secret":"` + vectorSecret + `"}]`)
	if err != nil || len(ds) != 1 || ds[0].Name != "chat" {
		t.Fatalf("parse = %+v %v", ds, err)
	}
	var many []string
	for i := 0; i <= outhook.MaxDestinations; i++ {
		many = append(many, fmt.Sprintf(`{"name":"d%d","url":"https://h.example","secret":"%s"}`, i, vectorSecret))
	}
	for _, bad := range []string{
		"[" + strings.Join(many, ",") + "]",
		`{"name":"chat"}`,
		`[{"name":"Chat!","url":"https://h.example","secret":"` + vectorSecret + `"}]`,
		`[{"name":"chat","url":"ftp://h.example","secret":"` + vectorSecret + `"}]`,
		`[{"name":"chat","url":"https://u:p@h.example","secret":"` + vectorSecret + `"}]`,
		`[{"name":"chat","url":"https://h.example","secret":"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]`,
		`[{"name":"a","url":"https://h.example","secret":"` + vectorSecret + `"},{"name":"a","url":"https://h.example","secret":"` + vectorSecret + `"}]`,
	} {
		_, err := outhook.Parse(bad)
		if err == nil {
			t.Errorf("accepted %s", bad)
			continue
		}
		if strings.Contains(err.Error(), "MfKQ9r8") || strings.Contains(err.Error(), "h.example") {
			t.Errorf("error quotes the configuration: %v", err)
		}
	}
}
