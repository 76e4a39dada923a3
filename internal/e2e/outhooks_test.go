package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/outhook"
	"github.com/criticizer/criticizer/internal/testenv"
)

// hookSecret is the e2e receivers' whsec_ secret.
const hookSecret = "whsec_ZTJlLXJlY2VpdmVyLXNlY3JldC1ub3QtZm9yLXByb2Q="

// withHooks configures the stack's webhook destinations: name → URL.
func withHooks(dests map[string]string) func(*config.Config) {
	return func(c *config.Config) {
		var ds []outhook.Destination
		for name, url := range dests {
			ds = append(ds, outhook.Destination{Name: name, URL: url, Secret: hookSecret})
		}
		b, _ := json.Marshal(ds)
		c.OutboundWebhooks, c.AllowPrivateWebhooks = string(b), true
	}
}

func hookReceiver(t *testing.T) (*devstack.HookReceiver, string) {
	t.Helper()
	rcv, err := devstack.NewHookReceiver(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return rcv, srv.URL
}

// about returns the arrived messages about changelist cl, by webhook-id.
func about(rcv *devstack.HookReceiver, cl string) map[string][]devstack.ArrivedHook {
	out := map[string][]devstack.ArrivedHook{}
	for _, a := range rcv.Arrived() {
		var b outhook.Body
		if json.Unmarshal(a.Body, &b) == nil && b.Changelist.ID == cl {
			out[a.ID] = append(out[a.ID], a)
		}
	}
	return out
}

// A webhook destination whose first answer is lost after it took the
// message gets that message again under the same webhook-id with the
// same body; two versions give their own ids (a Started and a Finished
// each); every signature verifies with the receiver's secret; the emails
// go out as before.
// Rules: R-CHANNEL-2, R-CHANNEL-3, R-CHANNEL-4, R-CHANNEL-8.
func TestOutboundWebhook_LostAnswer_SameIDAndBody(t *testing.T) {
	rcv, url := hookReceiver(t)
	rcv.LoseAnswers(1)
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, withHooks(map[string]string{"chat": url}))
	cl := testenv.Prefix(t)
	for v := 1; v <= 2; v++ {
		resp, b := s.post(fmt.Sprintf("key-%s-%d", cl, v), sample(t, cl, v, "ann@example.com"))
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("v%d: %d %s", v, resp.StatusCode, b)
		}
		var acc api.Accepted
		_ = json.Unmarshal(b, &acc)
		var jv api.JobView
		eventually(t, 60*time.Second, fmt.Sprintf("v%d succeeded", v), func() bool {
			s.getJSON(acc.Links.Self, &jv)
			return jv.Status == job.StatusSucceeded
		})
	}
	eventually(t, 60*time.Second, "four messages, the lost one again", func() bool {
		return len(about(rcv, cl)) == 4 && len(rcv.Arrived()) >= 5
	})
	time.Sleep(2 * time.Second) // nothing more comes
	byID := about(rcv, cl)
	seen := map[string]bool{}
	resent := 0
	for id, as := range byID {
		var b outhook.Body
		_ = json.Unmarshal(as[0].Body, &b)
		key := fmt.Sprintf("v%d %s", b.Changelist.Version, b.Phase)
		if seen[key] {
			t.Errorf("%s arrived under two ids", key)
		}
		seen[key] = true
		if b.ID != id || b.Version != outhook.BodyVersion {
			t.Errorf("%s: body id %q version %d under webhook-id %q", key, b.ID, b.Version, id)
		}
		for _, a := range as {
			if !a.Verified {
				t.Errorf("%s: signature does not verify: %s", key, a.Error)
			}
			if string(a.Body) != string(as[0].Body) {
				t.Errorf("%s: a resend changed the body", key)
			}
		}
		if len(as) > 1 {
			resent++
			// Signed afresh at the resend's own time (the same second
			// when it follows at once; TestHook_ResendSameIDAndBody_FreshSignature
			// moves the clock).
			if !as[0].AnswerLost || as[1].Timestamp < as[0].Timestamp {
				t.Errorf("%s: resent %d times, first answer lost %v, timestamps %s then %s", key, len(as), as[0].AnswerLost, as[0].Timestamp, as[1].Timestamp)
			}
		}
		if b.Phase == "finished" && (b.Outcome != "reviewed" || b.Counts == nil || b.Text == "" || b.JobURL == "") {
			t.Errorf("%s: body %s", key, as[0].Body)
		}
	}
	for _, want := range []string{"v1 started", "v1 finished", "v2 started", "v2 finished"} {
		if !seen[want] {
			t.Errorf("no %s message", want)
		}
	}
	if resent != 1 {
		t.Errorf("%d messages arrived more than once, want the one whose answer was lost", resent)
	}
	if got := perRecipient(emailsFor(t, s.env.SES, cl)); got["ann@example.com"] != 2 {
		t.Errorf("ann got %d emails, want one per version", got["ann@example.com"])
	}
}

// A destination that always fails never holds up the email or the job:
// the email is sent, the job succeeds, and each post task is retried and
// dead-lettered with its envelope, the job's status left alone.
// Rules: R-CHANNEL-4.
func TestOutboundWebhook_AlwaysFailing_EmailSentPostDeadLettered(t *testing.T) {
	rcv, url := hookReceiver(t)
	rcv.AnswerWith(http.StatusBadGateway)
	s := startStack(t, devstack.FunctionOptions{Pollers: 2}, withHooks(map[string]string{"down": url}))
	cl := testenv.Prefix(t)
	resp, b := s.post("key-"+cl, sample(t, cl, 1, "ann@example.com"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var acc api.Accepted
	_ = json.Unmarshal(b, &acc)
	var jv api.JobView
	eventually(t, 60*time.Second, "job succeeded", func() bool {
		s.getJSON(acc.Links.Self, &jv)
		return jv.Status == job.StatusSucceeded
	})
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
	eventually(t, 120*time.Second, "the post tasks dead-lettered", func() bool {
		n := 0
		for _, env := range envelopesFor(t, s, job.StageNotify, acc.JobID) {
			var m job.Message
			if json.Unmarshal([]byte(env.Original.Body), &m) == nil && m.Task == job.TaskPost && m.Delivery != "" {
				n++
			}
		}
		return n == 2 // the Started and the Finished post
	})
	if got := len(about(rcv, cl)); got != 2 {
		t.Errorf("%d ids arrived, want 2", got)
	}
	s.getJSON(acc.Links.Self, &jv)
	if jv.Status != job.StatusSucceeded {
		t.Errorf("job %s after its posts were dead-lettered, want succeeded", jv.Status)
	}
}

// A version whose fetch is dead-lettered is posted Finished, not
// reviewed; the operator's replay that then reviews it posts Finished
// again, reviewed, under an id of its own; the emails go out once.
// Rules: R-CHANNEL-4.
func TestOutboundWebhook_DeadLetteredThenReplayed_NotReviewedThenReviewed(t *testing.T) {
	rcv, url := hookReceiver(t)
	s := startStack(t, devstack.FunctionOptions{}, withHooks(map[string]string{"chat": url}))
	diffSrv := newFlakyDiffServer(t, -1, http.StatusNotFound, sampleDiff(t))
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, diffURLBody(t, cl, diffSrv.URL+"/diff"))
	s.waitJob(id, 30*time.Second, job.StatusDeadLettered)
	finished := func() map[string]outhook.Body {
		out := map[string]outhook.Body{}
		for _, as := range about(rcv, cl) {
			var b outhook.Body
			_ = json.Unmarshal(as[0].Body, &b)
			if b.Phase == "finished" {
				out[b.Outcome] = b
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "a finished message, not reviewed", func() bool { return finished()["not_reviewed"].ID != "" })
	if len(about(rcv, cl)) != 1 {
		t.Fatalf("%d ids before the replay, want the not-reviewed one alone (no started: the version was never placed)", len(about(rcv, cl)))
	}
	envs := dlqBodies(t, s, job.StageFetch)
	if len(envs) != 1 {
		t.Fatalf("fetch DLQ holds %d, want 1", len(envs))
	}
	env, _, _ := deadletter.Decode([]byte(envs[0]))
	diffSrv.healed.Store(true)
	if out, err := s.cli("dlq", "replay", env.ID, "--from-start", "--note", "diff republished"); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	eventually(t, 30*time.Second, "a finished message, reviewed", func() bool { return finished()["reviewed"].ID != "" })
	f := finished()
	if f["reviewed"].ID == f["not_reviewed"].ID || f["reviewed"].Counts == nil {
		t.Fatalf("finished messages %+v", f)
	}
	if got := perRecipient(emailsFor(t, s.env.SES, cl)); got["reviewer1@example.com"] != 1 {
		t.Fatalf("emails %v, want one per recipient", got)
	}
}
