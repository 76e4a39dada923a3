// Package e2e holds the end-to-end tests: the real handlers, pollers and
// HTTP adapter of the local stack, against the real emulators started by
// `make test`. Assertions are on what users see: emails in the SES store,
// rows in DynamoDB, messages in the DLQs.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/testseed"
	"github.com/criticizer/criticizer/internal/webhook"
)

const secret = "e2e-generic-webhook-secret-0123456789abcdef"

// stack is one test's running Criticizer.
type stack struct {
	t   *testing.T
	env testenv.Env
	res devstack.Resources
	cfg config.Config
	fns *devstack.Functions
	srv *httptest.Server
	log *bytes.Buffer
	sw  *syncWriter
}

// logText is the functions' log so far (safe while they run).
func (s *stack) logText() string {
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	return s.log.String()
}

// countLines counts the log lines that hold every one of subs.
func countLines(logs string, subs ...string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(line, sub)
		}
		if all && line != "" {
			n++
		}
	}
	return n
}

func startStack(t *testing.T, o devstack.FunctionOptions, tweak ...func(*config.Config)) *stack {
	t.Helper()
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoints, cfg.WebhookSecret, cfg.SESStoreURL, cfg.AllowPrivateDiffs = env.Endpoints, secret, env.SESURL, true
	cfg.DiffURLPorts = []int{0}
	res.Apply(&cfg)
	// fauxqs's counters are exact at once; SQS's settle within about a
	// minute (internal/drain), which the default allows for.
	cfg.EvidenceCounterLag = time.Second
	// Every version is mailed at once, as before R-QUIET-1..3: the tests
	// that are about staying quiet turn it on with a tweak (quietly).
	// Field by field: LLM and Notify hold the stages' other settings too.
	cfg.LLM.CollapseWindow, cfg.Notify.MailSameDiff, cfg.Notify.MailUnchangedReruns = 0, true, true
	// Reviewer refreshes gathered over a second, not ten (R-BUDGET-3).
	cfg.Budgets.ReviewerRefreshWindow = time.Second
	for _, f := range tweak {
		f(&cfg)
	}
	var logs bytes.Buffer
	sw := &syncWriter{w: &logs}
	log := obs.NewLogger(io.MultiWriter(sw, testWriter{t}), cfg.LogLevel)
	// Retry jitter drawn from the test's seed (printed if the test fails),
	// one source per runner: a *rand.Rand is not safe for concurrent use.
	seed := testseed.Seed(t, 1)
	var runners atomic.Uint64
	o.Wire.Runner = append([]stage.Option{func(r *stage.Runner) {
		stage.WithRand(retry.NewRand(seed + runners.Add(1)))(r)
	}}, o.Wire.Runner...)
	fns, err := devstack.StartFunctions(context.Background(), cfg, res, log, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fns.API)
	t.Cleanup(func() { srv.Close(); fns.Stop() })
	return &stack{t: t, env: env, res: res, cfg: cfg, fns: fns, srv: srv, log: &logs, sw: sw}
}

// post sends a signed generic webhook.
func (s *stack) post(key string, body []byte) (*http.Response, []byte) {
	s.t.Helper()
	return s.postSigned(key, body, webhook.Sign([]byte(secret), body))
}

func (s *stack) postSigned(key string, body []byte, sig string) (*http.Response, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/webhooks/generic", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if sig != "" {
		req.Header.Set(webhook.SignatureHeader, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// jobLink is a job's status link, with the token intake's answers carry.
func (s *stack) jobLink(id job.ID) string {
	key := s.cfg.UnsubscribeKey
	if key == "" {
		key = devstack.LocalUnsubscribeKey
	}
	return api.NewStatusLinks(key).Link(id)
}

func (s *stack) getJSON(path string, v any) int {
	s.t.Helper()
	resp, err := http.Get(s.srv.URL + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// emailsFor returns the stored emails whose subject names the changelist.
func emailsFor(t *testing.T, ses *devstack.SESEmulator, changelistID string) []devstack.StoredEmail {
	t.Helper()
	all, err := ses.Emails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []devstack.StoredEmail
	for _, e := range all {
		if strings.Contains(e.Subject, "] "+changelistID+": ") {
			out = append(out, e)
		}
	}
	return out
}

// versionLine is the text body's first line, which names the version (the
// subject is the same for every version, R-THREAD-1).
var versionLine = regexp.MustCompile(`\ACriticizer review: .* version ([0-9]+)\n`)

// versionOf is the review version an email is about; 0 if it names none.
func versionOf(e devstack.StoredEmail) int {
	m := versionLine.FindStringSubmatch(e.Body.Text)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// perRecipient counts emails per recipient.
func perRecipient(emails []devstack.StoredEmail) map[string]int {
	n := map[string]int{}
	for _, e := range emails {
		for _, to := range e.Destination.To {
			n[to]++
		}
	}
	return n
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample returns the events/ sample webhook with a unique changelist id.
func sample(t *testing.T, changelistID string, version int, recipients ...string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../events/generic-webhook.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["changelist_id"], m["review_version"] = changelistID, version
	if len(recipients) > 0 {
		m["recipients"] = recipients
	}
	out, _ := json.Marshal(m)
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// sdkAttempts is how many attempts the SDK makes at a call it retries (the
// standard retryer's default): a fault meant to reach Criticizer's own
// code, not to be absorbed by the SDK, fires that many times.
const sdkAttempts = awsretry.DefaultMaxAttempts
