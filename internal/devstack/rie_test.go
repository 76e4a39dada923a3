package devstack_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/testenv"
)

// heldProxy forwards to a service, except that while hold is on it keeps
// each request until its client goes away, and never forwards it.
type heldProxy struct {
	hold      atomic.Bool
	held      chan struct{} // a request is being held
	abandoned atomic.Int64  // held requests whose client went away
	next      http.Handler
}

func (h *heldProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.hold.Load() {
		// The server notices a client gone only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case h.held <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		h.abandoned.Add(1)
		return
	}
	h.next.ServeHTTP(w, r)
}

// The real feedback bootstrap, built for this machine, runs under AWS's
// Lambda Runtime Interface Emulator with a 1 s function timeout, driven by
// the poller from the feedback queue. Its first invocation runs over (its
// runtime frozen mid-call, as a handler stuck in a slow call that ignores
// its deadline would be): RIE kills the runtime at the timeout and answers
// "Task timed out"; the call it was making never reached DynamoDB; the
// poller deletes nothing, and the message returns after the visibility
// timeout with its receive count up. The next invocation runs in a new
// runtime (RIE initialises the function again) and succeeds, and the
// poller applies its answer.
func TestRIE_RealBootstrap_KilledAtTimeout_PollerDrivesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds RIE and a bootstrap")
	}
	env := testenv.Stack(t)
	ctx := context.Background()
	dir := t.TempDir()
	rie, err := devstack.BuildRIE(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := devstack.BuildBootstrap(ctx, filepath.Join("..", ".."), "feedback", filepath.Join(dir, "feedback", "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	res := testenv.Provision(t, env)
	if _, err := env.Clients.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(res.FeedbackQueue),
		Attributes: map[string]string{"VisibilityTimeout": "2"}}); err != nil {
		t.Fatal(err)
	}
	dynamo, _ := url.Parse(env.Endpoints.DynamoDB)
	hp := &heldProxy{held: make(chan struct{}, 1), next: httputil.NewSingleHostReverseProxy(dynamo)}
	srv := httptest.NewServer(hp)
	defer srv.Close()
	var cfg config.Config
	res.Apply(&cfg)
	cfg.Endpoints = env.Endpoints
	cfg.Endpoints.DynamoDB = srv.URL
	cfg.ConfigurationSet = "rie-set"
	tpl, err := devstack.DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := devstack.BootstrapEnvs(tpl, res, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	fenv := envs["feedback"]
	fn, err := devstack.StartRIE(ctx, rie, boot, "feedback", fenv, time.Second, filepath.Join(dir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Stop()

	body := fmt.Sprintf(`{"eventType":"Send","mail":{"timestamp":%q,"messageId":"rie-test-1","source":"a@example.com","tags":{"ses:configuration-set":["rie-set"]}},"send":{}}`,
		time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(res.FeedbackQueue), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	hp.hold.Store(true)

	type result struct {
		receive string
		err     error
	}
	var mu sync.Mutex
	var results []result
	h := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := fn.HandleSQS(ctx, ev)
		mu.Lock()
		results = append(results, result{ev.Records[0].Attributes["ApproximateReceiveCount"], err})
		mu.Unlock()
		return resp, err
	}
	// The poller waits longer than RIE: RIE is what ends the invocation.
	p := &devstack.Poller{SQS: env.Clients.SQS, QueueURL: res.FeedbackQueue, QueueARN: res.FeedbackQueueARN, Handler: h,
		BatchSize: 10, Timeout: fn.Timeout() + 2*time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(pctx); close(done) }()
	defer func() { cancel(); <-done }()

	select {
	case <-hp.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the function never called DynamoDB")
	}
	// Freeze the runtime mid-call: it can neither answer nor notice its
	// deadline, like a handler stuck past it.
	rt := runtimePID(t, fn.PID())
	if err := syscall.Kill(rt, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(results) >= 1 })
	hp.hold.Store(false)
	waitFor(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(results) >= 2 })
	waitFor(t, 10*time.Second, func() bool { return queueCount(t, env.Clients.SQS, res.FeedbackQueue) == 0 })
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	if r := results[0]; r.receive != "1" || !errors.Is(r.err, devstack.ErrFunctionTimedOut) {
		t.Fatalf("first invocation: receive %s, error %v; want receive 1 ended by RIE's timeout", r.receive, r.err)
	}
	if r := results[1]; r.receive != "2" || r.err != nil {
		t.Fatalf("second invocation: receive %s, error %v; want receive 2, answered", r.receive, r.err)
	}
	if n := hp.abandoned.Load(); n < 1 {
		t.Fatal("the killed runtime's DynamoDB call was not abandoned")
	}
	if _, err := os.FindProcess(rt); err == nil && syscall.Kill(rt, 0) == nil {
		t.Fatalf("the frozen runtime (pid %d) is still alive after the timeout", rt)
	}
	log, err := os.ReadFile(fn.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "INIT START"); n != 2 {
		t.Fatalf("RIE initialised the function %d times, want 2 (a new runtime after the kill)\n%s", n, log)
	}
}

// runtimePID finds the runtime process RIE started (its only child).
func runtimePID(t *testing.T, parent int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	t.Fatalf("no child of RIE (pid %d)", parent)
	return 0
}
