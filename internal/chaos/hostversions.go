package chaos

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/owed"
)

// The code host's versions part: pull requests on a GitHub stand-in
// (devstack.GitHubStandIn), each opened and pushed to, their
// pull_request webhooks (`opened`, then `synchronize` with its
// `before`) signed as GitHub signs them and posted in a seeded order —
// pushes late (x5's synchronize before x3's and x4's), two at once, a
// force-push (the branch rewritten: a head diverged from the one it
// replaced, its webhook before the rewritten head's own). Versions
// are intake's and the fetch stage's to order (R-SOURCE-6, the compare
// API); what each reader is owed is the oracle's from the code host's
// order of the heads (R-OWED-1), never from intake's numbers.

// hostKinds are the ways a pull request's pushes reach intake.
var hostKinds = []string{"late", "at-once", "force-push"}

// hostHead is one head commit of a pull request.
type hostHead struct {
	Name, SHA, Parent, Before string
	Action                    string // "opened", "synchronize"
	diff                      []byte
	// sent and answered are when its webhook was first sent and first
	// answered below 500; status is that answer, stale whether it was
	// intake's stale answer, version the version it was accepted as.
	sent, answered time.Time
	status         int
	stale          bool
	version        int
	jobID          job.ID
}

// file is the file its diff adds: an email that lists it reviews it.
func (h *hostHead) file() string { return "h" + h.SHA[:12] + ".go" }

// hostPull is one pull request of the code host's part.
type hostPull struct {
	Number     int
	Kind       string
	Logins     []string
	Recipients []string
	// Heads in the code host's order, oldest first; Posts the order
	// their webhooks are posted in, each group at once.
	Heads []*hostHead
	Posts [][]int
}

func (p *hostPull) changelist(repo string) string { return fmt.Sprintf("%s#%d", repo, p.Number) }

func sha(parts ...string) string {
	s := sha1.Sum([]byte(strings.Join(parts, "/")))
	return hex.EncodeToString(s[:])
}

// generateHostPulls builds n pull requests on base, their kinds in
// turn.
func generateHostPulls(run, base string, n int) []*hostPull {
	out := make([]*hostPull, n)
	for i := range out {
		p := &hostPull{Number: 100 + i, Kind: hostKinds[i%len(hostKinds)]}
		for _, r := range []string{"a", "b"} {
			p.Logins = append(p.Logins, fmt.Sprintf("gh%03d%s-%s", i, r, run))
			p.Recipients = append(p.Recipients, fmt.Sprintf("gh%03d%s.%s@example.com", i, r, run))
		}
		head := func(name, parent, before, action string) *hostHead {
			h := &hostHead{Name: name, SHA: sha(run, fmt.Sprint(p.Number), name), Parent: parent, Before: before, Action: action}
			h.diff = fmt.Appendf(nil, "diff --git a/%[1]s b/%[1]s\nnew file mode 100644\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,2 @@\n+package x\n+// TODO: the change at %[2]s\n",
				h.file(), h.SHA[:7])
			return h
		}
		x1 := head("x1", base, "", "opened")
		x2 := head("x2", x1.SHA, x1.SHA, "synchronize")
		switch p.Kind {
		case "late":
			// x5's synchronize (before: x4, which intake has not seen)
			// comes after x2's: a version the fetch stage orders with
			// the compare API, ahead of x2. Then x3's, late, naming x2
			// — versioned, not the newest — and named by no one: a
			// version the compare API places behind x5's, skipped
			// (fetch_order.go). Then x4's, which x5 named: stale at
			// intake.
			x3 := head("x3", x2.SHA, x2.SHA, "synchronize")
			x4 := head("x4", x3.SHA, x3.SHA, "synchronize")
			x5 := head("x5", x4.SHA, x4.SHA, "synchronize")
			p.Heads, p.Posts = []*hostHead{x1, x2, x3, x4, x5}, [][]int{{0}, {1}, {4}, {2}, {3}}
		case "at-once":
			x3 := head("x3", x2.SHA, x2.SHA, "synchronize")
			p.Heads, p.Posts = []*hostHead{x1, x2, x3}, [][]int{{0}, {1, 2}}
		default:
			// The branch rewritten: ya replaces x2 on x1 (a force-push;
			// its synchronize names x2 as before), yb follows ya; yb's
			// webhook comes first, naming ya, which intake has not
			// seen: the compare API says yb diverged from x2.
			ya := head("ya", x1.SHA, x2.SHA, "synchronize")
			yb := head("yb", ya.SHA, ya.SHA, "synchronize")
			p.Heads, p.Posts = []*hostHead{x1, x2, ya, yb}, [][]int{{0}, {1}, {3}, {2}}
		}
		out[i] = p
	}
	return out
}

// hostDirectory is the reviewer directory's GitHub part: each login's
// address.
func hostDirectory(ps []*hostPull) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		for i, l := range p.Logins {
			out[l] = p.Recipients[i]
		}
	}
	return out
}

// pushHosts pushes every pull request's heads to gh and posts their
// webhooks in the pull request's order, the pull requests concurrently;
// each webhook is retried until answered below 500. The jobs accepted
// go to accepted (for the drain).
func pushHosts(ctx context.Context, s *sender, gh *devstack.GitHubStandIn, secret []byte, ps []*hostPull, accepted map[job.ID]bool) {
	var mu sync.Mutex
	post := func(p *hostPull, h *hostHead) {
		// The code host has the commit before it sends its webhook.
		gh.Push(h.SHA, h.Parent, h.diff)
		body := devstack.GitHubPullRequestEvent(gh.Repo, p.Number, h.Action, "chaos-author", fmt.Sprintf("Chaos pushes %d", p.Number),
			gh.Base, h.Before, h.SHA, p.Logins)
		h.sent = time.Now()
		st, b := s.deliverGitHub(ctx, "pull_request", sha("delivery", h.SHA)[:32], secret, body)
		var ans struct {
			Status        string `json:"status"`
			JobID         job.ID `json:"job_id"`
			ReviewVersion int    `json:"review_version"`
		}
		_ = json.Unmarshal(b, &ans)
		mu.Lock()
		defer mu.Unlock()
		h.answered, h.status = time.Now(), st
		h.stale = st == http.StatusOK && ans.Status == "stale"
		if (st == http.StatusAccepted || st == http.StatusOK) && ans.JobID != "" {
			h.jobID, h.version = ans.JobID, ans.ReviewVersion
			accepted[ans.JobID] = true
		}
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		gh.RequestReviewers(p.Number, p.Logins...)
		wg.Go(func() {
			for _, group := range p.Posts {
				var at sync.WaitGroup
				for _, i := range group {
					at.Go(func() { post(p, p.Heads[i]) })
				}
				at.Wait()
			}
		})
	}
	wg.Wait()
}

// deliverGitHub posts one GitHub webhook until it is answered below 500,
// and returns that answer (0 when it never was). A redelivery keeps its
// delivery id, as GitHub's does.
func (s *sender) deliverGitHub(ctx context.Context, event, id string, secret, body []byte) (int, []byte) {
	backoff := 50 * time.Millisecond
	for attempt := 1; attempt <= s.maxAttempts && ctx.Err() == nil; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/webhooks/github", bytes.NewReader(body))
		if err != nil {
			return 0, nil
		}
		req.Header = devstack.GitHubHeaders(event, id, secret, body)
		if resp, err := s.client.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return resp.StatusCode, b
			}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
	return 0, nil
}

// hostWorld adds the code host's part to the oracle's world w: each pull
// request's heads in the code host's order, when each webhook was sent
// and answered (milliseconds since t0); and returns the mails of it that
// reached a reader — each stored email of one of its versions, its head
// told by the file the email reviews — with what is wrong with the
// emails themselves (an email reviewing no one head, or another head
// than the one intake gave its version to).
func hostWorld(w *owed.World, repo string, ps []*hostPull, t0 time.Time, emails []devstack.StoredEmail, ended map[job.ID]bool) ([]owed.Mail, []string) {
	ms := func(t time.Time) int { return int(t.Sub(t0) / time.Millisecond) }
	type where struct {
		p       *hostPull
		reader  string
		version int
	}
	ids := map[string]where{}
	for _, p := range ps {
		c := owed.Change{ID: p.changelist(repo), Author: "chaos-author"}
		for _, h := range p.Heads {
			oh := owed.Head{Name: h.Name, Readers: p.Recipients, Diff: h.SHA, Arrived: ms(h.sent), Took: ms(h.answered) - ms(h.sent),
				LostRace: h.stale, Failed: h.status == 0}
			c.Heads = append(c.Heads, oh)
		}
		w.Changes = append(w.Changes, c)
		for _, r := range p.Recipients {
			for v := 1; v <= len(p.Heads)+1; v++ {
				ids[delivery.ID(job.ChangelistKey("github", c.ID), r, v)] = where{p, r, v}
			}
		}
	}
	var got []owed.Mail
	var problems []string
	reached := map[owed.Mail]bool{}
	for _, e := range emails {
		at, ok := ids[e.Header(mail.DeliveryIDHeader)]
		if !ok {
			continue
		}
		// The versions before it are listed as resolved, after its own
		// findings.
		text, _, _ := strings.Cut(e.Body.Text, "Resolved since version")
		var heads []*hostHead
		for _, h := range at.p.Heads {
			if strings.Contains(text, h.file()) {
				heads = append(heads, h)
			}
		}
		cl := at.p.changelist(repo)
		if len(heads) != 1 {
			problems = append(problems, fmt.Sprintf("%s version %d to %s reviews %d heads, want one", cl, at.version, at.reader, len(heads)))
			continue
		}
		h := heads[0]
		if h.version != 0 && h.version != at.version {
			problems = append(problems, fmt.Sprintf("%s version %d to %s reviews %s, accepted as version %d", cl, at.version, at.reader, h.Name, h.version))
		}
		m := owed.Mail{Change: cl, Head: h.Name, Reader: at.reader}
		got = append(got, m)
		reached[m] = true
	}
	for _, p := range ps {
		for _, h := range p.Heads {
			if h.jobID == "" || !ended[h.jobID] {
				continue
			}
			for _, r := range p.Recipients {
				m := owed.Mail{Change: p.changelist(repo), Head: h.Name, Reader: r}
				if _, set := w.Verdicts[m]; !set && !reached[m] {
					w.Verdicts[m] = owed.Refused
				}
			}
		}
	}
	return got, problems
}

// hostJobs are the jobs the code host's part's webhooks were accepted
// as.
func hostJobs(ps []*hostPull) []job.ID {
	var out []job.ID
	for _, p := range ps {
		for _, h := range p.Heads {
			if h.jobID != "" && !slices.Contains(out, h.jobID) {
				out = append(out, h.jobID)
			}
		}
	}
	return out
}

// host is the code host's part as the check reads it.
type host struct {
	repo   string
	pulls  []*hostPull
	gerrit *gerritStack
}

// t0 is when its first webhook was sent.
func (hp host) t0() time.Time {
	var t0 time.Time
	for _, p := range hp.pulls {
		for _, h := range p.Heads {
			if !h.sent.IsZero() && (t0.IsZero() || h.sent.Before(t0)) {
				t0 = h.sent
			}
		}
	}
	return t0
}

// skippedJobs counts the jobs that ended skipped (a head the fetch stage
// placed behind a newer version's, R-SOURCE-6).
func skippedJobs(ctx context.Context, get func(context.Context, job.ID) (job.Job, error), ids []job.ID) int {
	n := 0
	for _, id := range ids {
		if j, err := get(ctx, id); err == nil && j.Skipped != "" {
			n++
		}
	}
	return n
}
