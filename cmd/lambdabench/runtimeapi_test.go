package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// TestMain doubles as a Lambda function: with LAMBDABENCH_TEST_FUNCTION
// set, the test binary runs aws-lambda-go's runtime loop, so the server is
// tested against the real runtime client, not against our reading of it.
func TestMain(m *testing.M) {
	switch os.Getenv("LAMBDABENCH_TEST_FUNCTION") {
	case "echo":
		lambda.Start(func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			lc, ok := lambdacontext.FromContext(ctx)
			dl, hasDeadline := ctx.Deadline()
			if !ok || lc.AwsRequestID == "" || !strings.HasPrefix(lc.InvokedFunctionArn, "arn:aws:lambda:") || !hasDeadline || time.Until(dl) <= 0 {
				return nil, errors.New("invocation context incomplete")
			}
			return in, nil
		})
	case "fail":
		lambda.Start(func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("boom")
		})
	}
	os.Exit(m.Run())
}

const testEvent = `{"Records":[{"messageId":"m-1","body":"{}"}]}`

// runFunction execs the test binary as a Lambda function against api and
// returns its result; the caller's cleanup kills it.
func runFunction(t *testing.T, api *RuntimeAPI, mode string) Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LAMBDABENCH_TEST_FUNCTION="+mode, "AWS_LAMBDA_RUNTIME_API="+api.Addr())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	get := func(c <-chan Result) Result {
		select {
		case r := <-c:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no result from the function")
		}
		return Result{}
	}
	select {
	case <-api.FirstNext():
	case <-time.After(30 * time.Second):
		t.Fatal("the function never asked for an invocation")
	}
	res := get(api.Results())
	select {
	case <-api.Idle():
	case <-time.After(30 * time.Second):
		t.Fatal("the function did not ask for a second invocation")
	}
	return res
}

// The real runtime client (aws-lambda-go) gets the event with a request
// id, function ARN and deadline it accepts, and its response reaches us.
func TestRuntimeAPI_RealClientGetsTheEventAndPostsTheResponse(t *testing.T) {
	api, err := NewRuntimeAPI([]byte(testEvent), "arn:aws:lambda:us-east-1:123456789012:function:f", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	res := runFunction(t, api, "echo")
	if res.Kind != "response" || string(res.Body) != testEvent || res.RequestID == "" {
		t.Fatalf("result %+v (body %s), want the echoed event", res, res.Body)
	}
	if got := outcome(res); got != "response" {
		t.Fatalf("outcome %q", got)
	}
}

func TestRuntimeAPI_RealClientPostsHandlerErrors(t *testing.T) {
	api, err := NewRuntimeAPI([]byte(testEvent), "arn:aws:lambda:us-east-1:123456789012:function:f", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	res := runFunction(t, api, "fail")
	if res.Kind != "error" || !strings.Contains(string(res.Body), "boom") {
		t.Fatalf("result %+v (body %s), want the handler's error", res, res.Body)
	}
	if got := outcome(res); !strings.HasPrefix(got, "error: ") {
		t.Fatalf("outcome %q", got)
	}
}

// The protocol details the runtime client relies on, checked directly:
// 200 with the headers on /next, 202 on a post for the current request id,
// 400 for another id, and a second /next that waits until the server
// closes (an idle sandbox).
func TestRuntimeAPI_Protocol(t *testing.T) {
	api, err := NewRuntimeAPI([]byte(testEvent), "arn:aws:lambda:us-east-1:123456789012:function:f", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + api.Addr() + "/2018-06-01/runtime/"
	resp, err := http.Get(base + "invocation/next")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id")
	dl, _ := strconv.ParseInt(resp.Header.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
	if resp.StatusCode != 200 || string(body) != testEvent || id == "" || dl <= time.Now().UnixMilli() ||
		resp.Header.Get("Lambda-Runtime-Invoked-Function-Arn") == "" {
		t.Fatalf("next: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	post := func(path string) int {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"ok":true}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("invocation/not-" + id + "/response"); got != http.StatusBadRequest {
		t.Fatalf("post for an unknown request id: %d, want 400", got)
	}
	if got := post("invocation/" + id + "/response"); got != http.StatusAccepted {
		t.Fatalf("post response: %d, want 202", got)
	}
	if r := <-api.Results(); r.Kind != "response" || r.RequestID != id || string(r.Body) != `{"ok":true}` {
		t.Fatalf("result %+v", r)
	}
	if got := post("init/error"); got != http.StatusAccepted {
		t.Fatalf("post init/error: %d, want 202", got)
	}
	if r := <-api.Results(); r.Kind != "init/error" {
		t.Fatalf("result %+v", r)
	}

	second := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "invocation/next")
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	<-api.Idle()
	select {
	case <-second:
		t.Fatal("the second /next returned while the server was open")
	default:
	}
	api.Close()
	<-second
}

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tbootstrap\nVmPeak:\t 1263012 kB\nVmHWM:\t   14212 kB\nVmRSS:\t   14000 kB\n"
	if got := parseVmHWM([]byte(status)); got != 14212 {
		t.Fatalf("parseVmHWM = %d, want 14212", got)
	}
	if got := parseVmHWM([]byte("Name:\tx\n")); got != 0 {
		t.Fatalf("no VmHWM: %d", got)
	}
}
