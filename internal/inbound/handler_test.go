package inbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/voting"
)

type objects struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (o *objects) Get(_ context.Context, ref string, limit int64) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.m[ref]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", ref, ErrNoObject)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("get %s: %w", ref, ErrTooLarge)
	}
	return b, nil
}

type queue struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *queue) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

// world is one critique emailed to ann and bo, on the in-memory stores,
// and the reply function.
type world struct {
	t       *testing.T
	h       *Handler
	now     time.Time
	jobs    *memstore.Jobs
	rows    *memstore.Deliveries
	votes   *memstore.Votes
	marks   *memstore.Dismissals
	replies *memstore.Replies
	rcpts   *memstore.Preferences
	objs    *objects
	q       *queue
	row     delivery.Row // ann's email
	addr    string       // its reply address
	log     *bytes.Buffer
	sesIDs  []string // the replies SES stored
	keys    []string // their confirmations' ids (Key), one per reply
}

const (
	domain = "replies.example.org"
	list   = "criticizer.reviews.example.org"
)

func newWorld(t *testing.T) *world {
	w := &world{t: t, now: at, objs: &objects{m: map[string][]byte{}}, q: &queue{}, log: &bytes.Buffer{}}
	clock := func() time.Time { return w.now }
	w.jobs, w.rows, w.votes, w.marks, w.replies, w.rcpts = memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewVotes(),
		memstore.NewDismissals(), memstore.NewReplies(), memstore.NewPreferences()
	c := critic.Critique{Critic: "offline/v1", Summary: "Two findings.", Files: 1, Findings: []critic.Finding{
		{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in.", Anchor: "line-println", Place: "place-println"},
		{File: "a.go", Line: 7, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO was added.", Anchor: "line-todo", Place: "place-todo"},
	}}
	raw, _ := json.Marshal(c)
	j := storetest.NewJob("billing-1042", 1)
	j.Critique, j.Recipients, j.Stage, j.Status = raw, []string{"ann@example.com", "bo@example.com"}, job.StageDone, job.StatusSucceeded
	w.jobs.Put(j)
	k := keys(t)
	r, _ := mail.NewRenderer()
	id := delivery.ID(job.ChangelistKey("generic", "billing-1042"), "ann@example.com", 1)
	w.addr, _ = k.Address(domain, id, at.Add(KeyLifetime))
	m, err := r.Render(mail.Data{ChangelistID: "billing-1042", ReviewVersion: 1, Title: "Add refunds", URL: "https://x.example/1",
		Author: "ana", Critique: c, ReplyTo: w.addr})
	if err != nil {
		t.Fatal(err)
	}
	w.row = delivery.Row{ID: id, JobID: j.ID, ChangelistKey: job.ChangelistKey("generic", "billing-1042"), Recipient: "ann@example.com",
		ReviewVersion: 1, Status: delivery.StatusDelivered, Message: m, CreatedAt: at, UpdatedAt: at}
	if _, _, err := w.rows.Ensure(context.Background(), w.row); err != nil {
		t.Fatal(err)
	}
	w.h = &Handler{Keys: k, InboundDomain: domain, Bucket: "criticizer-payloads", Objects: w.objs, Rows: w.rows,
		Recorder: &voting.Recorder{Votes: w.votes, Marks: w.marks, Rows: w.rows, Jobs: w.jobs},
		Mutes:    w.replies, Windows: w.replies, Claims: w.replies, Unsubscribes: w.rcpts, Queue: w.q, Renderer: r, ListID: list, PerHour: 3,
		Log: slog.New(slog.NewJSONHandler(w.log, nil)), Now: clock}
	return w
}

// reply stores a raw reply (a fixture, addressed to ann's reply address)
// as SES would, and returns its notification, changed by edit.
func (w *world) reply(fixture, sesID string, edit func(raw string, n map[string]any) string) []byte {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "replies", fixture))
	if err != nil {
		w.t.Fatal(err)
	}
	raw := strings.ReplaceAll(string(b), "reply+ahgfkm6bsqm2qjdjxi2nbpeq3c5wpyu5smdz7ozvzvux3zbwqub6lzofme@replies.example.org", w.addr)
	nb, err := os.ReadFile(filepath.Join("testdata", "notification.json"))
	if err != nil {
		w.t.Fatal(err)
	}
	var n map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(nb), "REPLY_ADDRESS", w.addr)), &n); err != nil {
		w.t.Fatal(err)
	}
	w.sesIDs = append(w.sesIDs, sesID)
	n["mail"].(map[string]any)["messageId"] = sesID
	n["receipt"].(map[string]any)["action"].(map[string]any)["objectKey"] = ObjectPrefix + sesID
	if edit != nil {
		raw = edit(raw, n)
	}
	w.objs.mu.Lock()
	w.objs.m[ObjectPrefix+sesID] = []byte(raw)
	w.objs.mu.Unlock()
	out, _ := json.Marshal(n)
	var parsed Notification
	_ = json.Unmarshal(out, &parsed)
	if hdr, _, _ := ReadMessage([]byte(raw)); hdr != nil {
		if k, _ := Key(parsed, hdr, w.row.Recipient); !slices.Contains(w.keys, k) {
			w.keys = append(w.keys, k)
		}
	}
	return out
}

func (w *world) process(body []byte) string {
	w.t.Helper()
	got, err := w.h.Process(context.Background(), body)
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// confirmations are the confirmation rows of the replies sent.
func (w *world) confirmations() []delivery.Row {
	var out []delivery.Row
	for _, k := range w.keys {
		if r, err := w.rows.Get(context.Background(), k); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// A reply from Gmail ("wrong 1", "useful 2") records both votes through
// the same operation as the vote links, hides finding 1 from ann's later
// emails, and writes one confirmation row that notify's reply task
// sends; the same reply again (SQS redelivery, or a redrive with a new
// SQS id) records nothing more and writes no second row.
// Rules: R-REPLY-4, R-REPLY-5, R-REPLY-8.
func TestProcess_ActsOnceConfirmsOnce(t *testing.T) {
	w := newWorld(t)
	body := w.reply("gmail.eml", "ses-1", nil)
	if got := w.process(body); got != Acted {
		t.Fatalf("outcome %q, want acted\n%s", got, w.log)
	}
	ctx := context.Background()
	votes, _ := w.votes.List(ctx)
	if len(votes) != 2 {
		t.Fatalf("%d votes, want 2", len(votes))
	}
	id1, _ := w.row.Message.Finding(1)
	id2, _ := w.row.Message.Finding(2)
	for _, v := range votes {
		if v.DeliveryID != w.row.ID || (v.FindingID == id1) != (v.Choice == vote.Wrong) || (v.FindingID != id1 && v.FindingID != id2) {
			t.Errorf("vote %+v", v)
		}
		if !v.VotedAt.Equal(time.Date(2026, 12, 1, 10, 2, 15, 114e6, time.UTC)) {
			t.Errorf("voted at %v, want the reply's receipt", v.VotedAt)
		}
	}
	marks, _ := w.marks.Marks(ctx, w.row.ChangelistKey, []string{unsubscribe.RecipientID("ann@example.com")})
	if n := len(marks[unsubscribe.RecipientID("ann@example.com")]); n != 1 {
		t.Errorf("ann's marks %v, want finding 1 dismissed", marks)
	}
	cs := w.confirmations()
	if len(cs) != 1 || cs[0].ID != delivery.ReplyIDOf("Ann@Example.com", "<CAF4hx8vJq=3mT9c2Yw9xT0aZQ+1@mail.gmail.com>") ||
		cs[0].Recipient != "ann@example.com" || cs[0].JobID != w.row.JobID {
		t.Fatalf("confirmations %+v, want one for ann keyed by her address and the reply's Message-ID", cs)
	}
	c := cs[0].Message
	if !strings.Contains(c.Text, "Finding #1 is marked wrong") || !strings.Contains(c.Text, "Finding #2 is marked useful") ||
		c.Thread != "<CAF4hx8vJq=3mT9c2Yw9xT0aZQ+1@mail.gmail.com>" || c.ReplyTo != w.addr || !strings.HasPrefix(c.Subject, "Re: [Criticizer] billing-1042") {
		t.Errorf("confirmation %q thread %q reply-to %q:\n%s", c.Subject, c.Thread, c.ReplyTo, c.Text)
	}
	if len(w.q.msgs) != 1 || w.q.msgs[0] != cs[0].NotifyMessage() {
		t.Fatalf("enqueued %v, want the confirmation's task", w.q.msgs)
	}
	resp, _ := w.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "redriven", Body: string(body)}, {MessageId: "again", Body: string(body)}}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if votes, _ := w.votes.List(ctx); len(votes) != 2 || len(w.confirmations()) != 1 {
		t.Errorf("after the same reply twice more: %d votes, %d confirmations; want 2 and 1", len(votes), len(w.confirmations()))
	}
	if strings.Count(w.log.String(), `"Outcome":"duplicate"`) != 2 {
		t.Errorf("the redeliveries are not counted as duplicates:\n%s", w.log)
	}
}

// mute, unsubscribe and help from the mail clients' fixtures; a number
// the email does not list records nothing and is said so.
// Rules: R-REPLY-4, R-REPLY-7.
func TestProcess_MuteUnsubscribeAndUnknownNumbers(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if got := w.process(w.reply("apple-mail.eml", "ses-mute", nil)); got != Acted {
		t.Fatalf("mute: %q", got)
	}
	muted, _ := w.replies.Muted(ctx, w.row.ChangelistKey, []string{unsubscribe.RecipientID("ann@example.com"), unsubscribe.RecipientID("bo@example.com")})
	if len(muted) != 1 || !muted[unsubscribe.RecipientID("ann@example.com")] {
		t.Errorf("muted %v, want ann only", muted)
	}
	if got := w.process(w.reply("thunderbird.eml", "ses-unsub", nil)); got != Acted {
		t.Fatalf("unsubscribe: %q", got)
	}
	st, _ := w.rcpts.Standings(ctx, []string{unsubscribe.RecipientID("ann@example.com")})
	if !st[unsubscribe.RecipientID("ann@example.com")].Preferences.UnsubscribedAll {
		t.Error("unsubscribe did not leave every email")
	}
	w.process(w.reply("iphone.eml", "ses-three", func(raw string, _ map[string]any) string {
		return strings.Replace(raw, "Wrong 1 & 2", "Wrong 3", 1)
	}))
	c, _ := w.rows.Get(ctx, w.keys[len(w.keys)-1])
	if !strings.Contains(c.Message.Text, "There is no finding #3 in that email (it lists 2)") {
		t.Errorf("confirmation of an unknown number:\n%s", c.Message.Text)
	}
	if votes, _ := w.votes.List(ctx); len(votes) != 1 {
		t.Errorf("%d votes, want thunderbird's useful 2 only", len(votes))
	}
}

// Whatever fails SES's verdicts, forges its From, names no reply address
// that opens, is an automatic reply or our own mail come back, is too
// large or is past the hourly bound is dropped: nothing recorded, nothing
// queued, counted by reason, and the address never logged.
// Rules: R-REPLY-2, R-REPLY-3, R-REPLY-6.
func TestProcess_DroppedNeverAnswered(t *testing.T) {
	set := func(path string, v any) func(string, map[string]any) string {
		return func(raw string, n map[string]any) string {
			parts := strings.Split(path, ".")
			m := n
			for _, p := range parts[:len(parts)-1] {
				m = m[p].(map[string]any)
			}
			m[parts[len(parts)-1]] = v
			return raw
		}
	}
	header := func(h string) func(string, map[string]any) string {
		return func(raw string, _ map[string]any) string { return h + "\r\n" + raw }
	}
	for name, tc := range map[string]struct {
		edit func(string, map[string]any) string
		want string
	}{
		"forged from": {func(raw string, n map[string]any) string {
			n["mail"].(map[string]any)["commonHeaders"].(map[string]any)["from"] = []any{"Mallory <mallory@example.com>"}
			return strings.Replace(raw, "From: Ann Reviewer <ann@example.com>", "From: Mallory <mallory@example.com>", 1)
		}, DropForged},
		"spf and dkim fail, no dmarc": {func(raw string, n map[string]any) string {
			r := n["receipt"].(map[string]any)
			r["spfVerdict"], r["dkimVerdict"], r["dmarcVerdict"] = map[string]any{"status": Fail}, map[string]any{"status": Fail}, map[string]any{"status": Gray}
			return raw
		}, DropUnauthenticated},
		"dmarc reject": {func(raw string, n map[string]any) string {
			r := n["receipt"].(map[string]any)
			r["dmarcVerdict"], r["dmarcPolicy"] = map[string]any{"status": Fail}, "reject"
			return raw
		}, DropDMARC},
		"spam":             {set("receipt.spamVerdict", map[string]any{"status": Fail}), DropSpam},
		"virus":            {set("receipt.virusVerdict", map[string]any{"status": Fail}), DropVirus},
		"unknown key":      {set("receipt.recipients", []any{"reply+" + strings.Repeat("a", KeyLen) + "@" + domain}), DropUnknownKey},
		"another domain":   {set("receipt.recipients", []any{"critic@" + domain}), DropUnknownKey},
		"vacation":         {header("Auto-Submitted: auto-replied"), DropAutoReply},
		"precedence bulk":  {header("Precedence: bulk"), DropAutoReply},
		"x-autoreply":      {header("X-Autoreply: yes"), DropAutoReply},
		"null sender":      {set("mail.source", ""), DropAutoReply},
		"our list":         {header("List-Id: Criticizer <" + list + ">"), DropLoop},
		"too large":        {func(raw string, _ map[string]any) string { return raw + strings.Repeat("x", MaxRawBytes) }, DropTooLarge},
		"another bucket":   {set("receipt.action.bucketName", "someone-elses"), DropUnreadable},
		"outside inbound/": {set("receipt.action.objectKey", "diffs/abc"), DropUnreadable},
		"not received":     {set("notificationType", "AmazonSnsSubscriptionSucceeded"), DropNotReceived},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			got := w.process(w.reply("gmail.eml", "ses-x", tc.edit))
			if got != tc.want {
				t.Fatalf("outcome %q, want %q", got, tc.want)
			}
			if votes, _ := w.votes.List(context.Background()); len(votes) != 0 || len(w.confirmations()) != 0 || len(w.q.msgs) != 0 {
				t.Errorf("%d votes, %d confirmations, %d messages: want nothing", len(votes), len(w.confirmations()), len(w.q.msgs))
			}
		})
	}
	w := newWorld(t)
	k, _ := KeyOf(w.addr, domain)
	w.now = at.Add(KeyLifetime + time.Hour)
	if got := w.process(w.reply("gmail.eml", "ses-late", nil)); got != DropExpired {
		t.Errorf("an expired address: %q", got)
	}
	w.now = at
	for i := range 4 {
		got := w.process(w.reply("apple-mail.eml", fmt.Sprint("ses-r", i), func(raw string, _ map[string]any) string {
			return strings.Replace(raw, "Message-Id: <8C1E2F3A", fmt.Sprintf("Message-Id: <%d-8C1E2F3A", i), 1) // four replies
		}))
		if want := map[bool]string{true: Acted, false: DropRateLimited}[i < 3]; got != want {
			t.Errorf("reply %d in the hour: %q, want %q", i+1, got, want)
		}
	}
	if len(w.confirmations()) != 3 {
		t.Errorf("%d confirmations, want 3 (the fourth reply in the hour is dropped)", len(w.confirmations()))
	}
	resp, _ := w.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: "not json"}}})
	if len(resp.BatchItemFailures) != 0 || !strings.Contains(w.log.String(), `"Reason":"malformed"`) {
		t.Errorf("a malformed record: failures %v; want it dropped and counted", resp.BatchItemFailures)
	}
	for _, leak := range []string{"ann@example.com", "example.com>", k} {
		if strings.Contains(w.log.String(), leak) {
			t.Errorf("the log holds %q", leak)
		}
	}
}

// A store that fails is retried: the record is a batch item failure, and
// the retry acts on it once.
// Rules: R-REPLY-8.
func TestHandle_StoreFailureRetried(t *testing.T) {
	w := newWorld(t)
	body := w.reply("gmail.eml", "ses-retry", nil)
	failing := &failingQueue{}
	w.h.Queue = failing
	resp, _ := w.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body)}}})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v, want the record retried", resp.BatchItemFailures)
	}
	w.h.Queue = w.q
	if got := w.process(body); got != Duplicate || len(w.q.msgs) != 1 {
		t.Errorf("retry: %q with %d messages, want the confirmation handed to notify once", got, len(w.q.msgs))
	}
	if votes, _ := w.votes.List(context.Background()); len(votes) != 2 || len(w.confirmations()) != 1 {
		t.Errorf("%d votes, %d confirmations after the retry", len(votes), len(w.confirmations()))
	}
}

type failingQueue struct{}

func (failingQueue) Enqueue(context.Context, job.Message) error { return io.ErrUnexpectedEOF }

// A reply that offers SES's verdicts one From and the reply function
// another is dropped whatever its commands: two From fields (the first
// ann's), a Sender other than its From, or a From other than the one
// SES's notification names. Nothing is recorded — no vote, no mute, no
// confirmation, nothing queued —, it is counted as ambiguous_from, and
// no address reaches the log.
// Rules: R-REPLY-2.
func TestProcess_TwoFromsOrAnotherSender_DroppedNothingActed(t *testing.T) {
	ctx := context.Background()
	command := func(raw string) string {
		return strings.Replace(raw, "wrong 1\r\nuseful 2", "wrong 1\r\nuseful 2\r\nmute", 1)
	}
	for name, edit := range map[string]func(string, map[string]any) string{
		"two from fields": func(raw string, _ map[string]any) string {
			return command(strings.Replace(raw, "From: Ann Reviewer <ann@example.com>\r\n",
				"From: Ann Reviewer <ann@example.com>\r\nFrom: Mallory <mallory@example.com>\r\n", 1))
		},
		"a sender other than the from": func(raw string, _ map[string]any) string {
			return command("Sender: mallory@example.com\r\n" + raw)
		},
		"ses judged another from": func(raw string, n map[string]any) string {
			n["mail"].(map[string]any)["commonHeaders"].(map[string]any)["from"] = []any{"Mallory <mallory@example.com>"}
			return command(raw)
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			body := w.reply("gmail.eml", "ses-two-froms", edit)
			if !strings.Contains(string(w.objs.m[ObjectPrefix+"ses-two-froms"]), "mute") {
				t.Fatal("the reply does not say mute")
			}
			resp, _ := w.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: string(body)}}})
			if len(resp.BatchItemFailures) != 0 || !strings.Contains(w.log.String(), `"Reason":"ambiguous_from"`) {
				t.Fatalf("failures %v; want the reply dropped and counted as ambiguous_from:\n%s", resp.BatchItemFailures, w.log)
			}
			votes, _ := w.votes.List(ctx)
			muted, _ := w.replies.Muted(ctx, w.row.ChangelistKey, []string{unsubscribe.RecipientID("ann@example.com")})
			if len(votes) != 0 || len(muted) != 0 || len(w.confirmations()) != 0 || len(w.q.msgs) != 0 {
				t.Errorf("%d votes, mutes %v, %d confirmations, %d messages: want nothing", len(votes), muted, len(w.confirmations()), len(w.q.msgs))
			}
			for _, leak := range []string{"ann@", "mallory@"} {
				if strings.Contains(w.log.String(), leak) {
					t.Errorf("the log holds %q", leak)
				}
			}
		})
	}
}

// The same reply received twice — its mail server lost the answer to
// DATA and sent it again, and SES gave each receipt its own message id
// and object — is acted on once and confirmed once: the second receipt
// finds the confirmation keyed by ann's address and the reply's
// Message-ID, hands it to notify again and records nothing. A choice the
// reader made between the two receipts stands: the second, received
// later, does not record "wrong 1" over her "useful 1".
// Rules: R-REPLY-8.
func TestProcess_SameReplyReceivedTwice_ActsOnceConfirmsOnce(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if got := w.process(w.reply("gmail.eml", "ses-first", nil)); got != Acted {
		t.Fatalf("first receipt: %q\n%s", got, w.log)
	}
	// Ann changes her mind on finding 1 with its vote link.
	id1, _ := w.row.Message.Finding(1)
	if _, err := w.h.Recorder.Record(ctx, w.row.ID, voting.Ref{Number: 1}, vote.Useful, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	second := w.reply("gmail.eml", "ses-second", func(raw string, n map[string]any) string {
		n["receipt"].(map[string]any)["timestamp"] = "2026-12-01T13:00:00.000Z" // received later
		return raw
	})
	if got := w.process(second); got != Duplicate {
		t.Fatalf("second receipt: %q, want duplicate\n%s", got, w.log)
	}
	if len(w.keys) != 1 || len(w.confirmations()) != 1 {
		t.Fatalf("%d confirmation keys, %d rows; want the one reply's one", len(w.keys), len(w.confirmations()))
	}
	if len(w.q.msgs) != 2 || w.q.msgs[0] != w.q.msgs[1] {
		t.Errorf("enqueued %v, want the one confirmation's task, handed on again", w.q.msgs)
	}
	votes, _ := w.votes.List(ctx)
	if len(votes) != 2 {
		t.Fatalf("%d votes, want 2", len(votes))
	}
	for _, v := range votes {
		if v.FindingID == id1 && v.Choice != vote.Useful {
			t.Errorf("finding 1 is %q: the second receipt recorded over ann's later choice", v.Choice)
		}
	}
}

// Receipts of one reply processed at once by several invocations: one
// claims the reply and acts; the others find its confirmation, or, while
// it is being written, are retried and then find it. One confirmation,
// the commands recorded once. A receipt whose claim another holds while
// no confirmation is written (the other crashed after claiming) is
// retried, never acts.
// Rules: R-REPLY-8.
func TestProcess_ReceiptsRacing_OneActs(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	const n = 8
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = w.reply("apple-mail.eml", fmt.Sprint("ses-race-", i), nil)
	}
	outcomes := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i], errs[i] = w.h.Process(ctx, bodies[i])
		}()
	}
	wg.Wait()
	acted := 0
	for i := range bodies {
		switch {
		case errs[i] != nil && errors.Is(errs[i], errActing):
			if outcomes[i], errs[i] = w.h.Process(ctx, bodies[i]); outcomes[i] != Duplicate { // SQS's retry
				t.Errorf("receipt %d retried: %q %v, want duplicate", i, outcomes[i], errs[i])
			}
		case errs[i] != nil:
			t.Fatalf("receipt %d: %v", i, errs[i])
		case outcomes[i] == Acted:
			acted++
		case outcomes[i] != Duplicate:
			t.Errorf("receipt %d: %q", i, outcomes[i])
		}
	}
	if acted != 1 || len(w.confirmations()) != 1 {
		t.Errorf("%d receipts acted, %d confirmations; want 1 and 1 (outcomes %v)", acted, len(w.confirmations()), outcomes)
	}
	muted, _ := w.replies.Muted(ctx, w.row.ChangelistKey, []string{unsubscribe.RecipientID("ann@example.com")})
	if !muted[unsubscribe.RecipientID("ann@example.com")] {
		t.Error("the reply's mute is not recorded")
	}

	// Another reply, claimed by a receipt that died before writing its
	// confirmation: a second receipt is retried and records nothing; the
	// first, redelivered, acts.
	w2 := newWorld(t)
	first := w2.reply("gmail.eml", "ses-died", nil)
	if ok, err := w2.replies.Claim(ctx, w2.keys[0], "ses-died"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got, err := w2.h.Process(ctx, w2.reply("gmail.eml", "ses-other", nil)); !errors.Is(err, errActing) {
		t.Fatalf("a receipt meeting another's claim: %q %v, want it retried", got, err)
	}
	if votes, _ := w2.votes.List(ctx); len(votes) != 0 || len(w2.confirmations()) != 0 {
		t.Fatalf("the receipt that lost the claim recorded %d votes, %d confirmations", len(votes), len(w2.confirmations()))
	}
	if got := w2.process(first); got != Acted {
		t.Fatalf("the claimant redelivered: %q", got)
	}
	if got := w2.process(w2.reply("gmail.eml", "ses-other", nil)); got != Duplicate || len(w2.confirmations()) != 1 {
		t.Errorf("the other receipt retried: %q, %d confirmations", got, len(w2.confirmations()))
	}
}

// A reply is keyed by its sender and its own Message-ID when it has one
// fit to key by: one Message-ID field, angle brackets around at most 248
// printable ASCII characters without spaces. Otherwise — none, two, too
// long, spaces or control characters: an outsider wrote it — by SES's
// message id, and said so. The sender is part of the key, case folded.
// Rules: R-REPLY-8.
func TestKey_OwnMessageIDBounded(t *testing.T) {
	n := Notification{Mail: events.SimpleEmailMessage{MessageID: "ses-1"}}
	own := delivery.ReplyIDOf("ann@example.com", "<a1@example.com>")
	bound, over := "<"+strings.Repeat("a", 244)+"@x.y>", "<"+strings.Repeat("a", 245)+"@x.y>" // 250 and 251 characters
	for name, tc := range map[string]struct {
		h      netmail.Header
		sender string
		want   string
		keyed  bool
	}{
		"own":                 {hdr("Message-ID: <a1@example.com>"), "ann@example.com", own, true},
		"blanks around":       {hdr("Message-ID:   <a1@example.com>  "), "ann@example.com", own, true},
		"sender case folded":  {hdr("Message-Id: <a1@example.com>"), "Ann@Example.COM", own, true},
		"another sender":      {hdr("Message-ID: <a1@example.com>"), "bo@example.com", delivery.ReplyIDOf("bo@example.com", "<a1@example.com>"), true},
		"none":                {hdr("Subject: x"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"two":                 {hdr("Message-ID: <a1@example.com>", "Message-ID: <a2@example.com>"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"a second, obsolete":  {hdr("Message-ID: <a1@example.com>", "Message-ID : <a2@example.com>"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"no brackets":         {hdr("Message-ID: a1@example.com"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"a space":             {hdr("Message-ID: <a1 @example.com>"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"not ascii":           {hdr("Message-ID: <é1@example.com>"), "ann@example.com", delivery.ReplyID("ses-1"), false},
		"at the bound":        {hdr("Message-ID: " + bound), "ann@example.com", delivery.ReplyIDOf("ann@example.com", bound), true},
		"longer than allowed": {hdr("Message-ID: " + over), "ann@example.com", delivery.ReplyID("ses-1"), false},
	} {
		if got, keyed := Key(n, tc.h, tc.sender); got != tc.want || keyed != tc.keyed {
			t.Errorf("%s: %q %v, want %q %v", name, got, keyed, tc.want, tc.keyed)
		}
	}
}

// A reply to a daily digest acts on the digest's numbers, which span its
// changelists: "wrong 3" records the vote and the mark on the version row
// of the changelist whose finding the digest numbered 3, and the
// confirmation names that changelist; "mute" names no changelist in a
// digest and mutes nothing, and the confirmation says so.
// Rules: R-DIGEST-6, R-REPLY-4, R-REPLY-5.
func TestProcess_DigestReply_NumbersSpanChangelists_MuteNamesNone(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	other := storetest.NewJob("billing-7", 2)
	oc := critic.Critique{Critic: "offline/v1", Summary: "One finding.", Files: 1, Findings: []critic.Finding{
		{File: "b.go", Line: 9, Severity: critic.SeverityError, Rule: "conflict-marker", Message: "A conflict marker.", Anchor: "line-conflict", Place: "place-conflict"}}}
	other.Critique, _ = json.Marshal(oc)
	w.jobs.Put(other)
	otherKey := job.ChangelistKey("generic", "billing-7")
	otherRow := delivery.Row{ID: delivery.ID(otherKey, "ann@example.com", 2), JobID: other.ID, ChangelistKey: otherKey, Recipient: "ann@example.com",
		ReviewVersion: 2, Status: delivery.StatusDigested, CreatedAt: at, UpdatedAt: at}
	if _, _, err := w.rows.Ensure(ctx, otherRow); err != nil {
		t.Fatal(err)
	}
	var first critic.Critique
	j, _ := w.jobs.Get(ctx, w.row.JobID)
	_ = json.Unmarshal(j.Critique, &first)
	due := at.Truncate(time.Hour)
	digestID := delivery.DigestID("ann@example.com", due)
	w.addr, _ = w.h.Keys.Address(domain, digestID, due)
	m, err := w.h.Renderer.RenderDigest(mail.DigestData{Date: "2026-12-01", ReplyTo: w.addr, Items: []mail.DigestItem{
		{Source: "generic", ChangelistID: "billing-1042", ReviewVersion: 1, Title: "Add refunds", URL: "https://x.example/1", Critique: first, DeliveryID: w.row.ID},
		{Source: "generic", ChangelistID: "billing-7", ReviewVersion: 2, Title: "Refund limits", URL: "https://x.example/7", Critique: oc, DeliveryID: otherRow.ID},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Numbered in the order given: #1 and #2 are billing-1042's, #3 is
	// billing-7's.
	if _, _, err := w.rows.Ensure(ctx, delivery.Row{ID: digestID, Recipient: "ann@example.com", Period: "2026-12-01", DueAt: due,
		Status: delivery.StatusDelivered, Message: m, CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	body := w.reply("apple-mail.eml", "ses-digest", func(raw string, _ map[string]any) string {
		return strings.Replace(raw, "Mute.", "Wrong 3\r\nMute.", 1)
	})
	if got := w.process(body); got != Acted {
		t.Fatalf("outcome %q\n%s", got, w.log)
	}
	votes, _ := w.votes.List(ctx)
	if len(votes) != 1 || votes[0].DeliveryID != otherRow.ID || votes[0].Rule != "conflict-marker" || votes[0].Choice != vote.Wrong {
		t.Fatalf("votes %+v; want one wrong on billing-7's row", votes)
	}
	marks, _ := w.marks.Marks(ctx, otherKey, []string{unsubscribe.RecipientID("ann@example.com")})
	if len(marks[unsubscribe.RecipientID("ann@example.com")]) != 1 {
		t.Errorf("no mark on billing-7: %v", marks)
	}
	muted, _ := w.replies.Muted(ctx, "", []string{unsubscribe.RecipientID("ann@example.com")})
	muted2, _ := w.replies.Muted(ctx, otherKey, []string{unsubscribe.RecipientID("ann@example.com")})
	if len(muted)+len(muted2) != 0 {
		t.Errorf("a digest's mute muted %v %v", muted, muted2)
	}
	cs := w.confirmations()
	if len(cs) != 1 || cs[0].JobID != job.ID(digestID) {
		t.Fatalf("confirmations %+v; want one, carried by the digest's id", cs)
	}
	text := cs[0].Message.Text
	for _, want := range []string{"your reply about the daily digest for 2026-12-01", "Finding #3 is marked wrong: your later emails about billing-7 leave it out",
		"Nothing muted: a digest is about several changelists."} {
		if !strings.Contains(text, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, text)
		}
	}
}
