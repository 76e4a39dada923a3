package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Lambda Runtime API (version 2018-06-01) as aws-lambda-go's runtime
// client speaks it (lambda/runtime_api_client.go): GET .../invocation/next
// answers 200 with the event and the invocation's headers; the function
// posts .../invocation/{id}/response or .../error and expects 202. A
// runtime that fails before its first /next posts .../init/error.
const (
	runtimePrefix        = "/2018-06-01/runtime/"
	headerRequestID      = "Lambda-Runtime-Aws-Request-Id"
	headerDeadlineMS     = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN    = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID        = "Lambda-Runtime-Trace-Id"
	headerFuncErrorType  = "Lambda-Runtime-Function-Error-Type"
	invocationNextPath   = runtimePrefix + "invocation/next"
	invocationPathPrefix = runtimePrefix + "invocation/"
	initErrorPath        = runtimePrefix + "init/error"
)

// Result is what the function posted for the invocation.
type Result struct {
	Kind      string // "response", "error" or "init/error"
	RequestID string
	ErrorType string // Lambda-Runtime-Function-Error-Type, for errors
	Body      []byte
	At        time.Time
}

// RuntimeAPI is a minimal in-process Lambda Runtime API serving one
// invocation to one process: the first /next gets Event, later ones block
// (the process is then idle, as a warm Lambda between invocations) until
// the process is killed or the server closed. It records when the process
// first asked for work (the end of its init) and what it answered.
type RuntimeAPI struct {
	Event       []byte
	FunctionARN string
	Deadline    time.Duration // from the first /next; the handler's context deadline

	ln        net.Listener
	srv       *http.Server
	closed    chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	nexts     int
	requestID string
	firstNext chan time.Time // the first /next, once
	idle      chan time.Time // the second /next, once
	results   chan Result
}

// NewRuntimeAPI listens on a free loopback port.
func NewRuntimeAPI(event []byte, functionARN string, deadline time.Duration) (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime api: listen: %w", err)
	}
	a := &RuntimeAPI{
		Event: event, FunctionARN: functionARN, Deadline: deadline,
		ln: ln, closed: make(chan struct{}),
		firstNext: make(chan time.Time, 1), idle: make(chan time.Time, 1), results: make(chan Result, 4),
	}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Addr is the value for AWS_LAMBDA_RUNTIME_API (host:port, no scheme).
func (a *RuntimeAPI) Addr() string { return a.ln.Addr().String() }

// FirstNext delivers the time of the first GET /next.
func (a *RuntimeAPI) FirstNext() <-chan time.Time { return a.firstNext }

// Idle delivers the time of the second GET /next: the invocation is over
// and the process waits for more work.
func (a *RuntimeAPI) Idle() <-chan time.Time { return a.idle }

// Results delivers each response, error or init error posted.
func (a *RuntimeAPI) Results() <-chan Result { return a.results }

// Close stops the server and releases blocked /next requests.
func (a *RuntimeAPI) Close() error {
	a.closeOnce.Do(func() { close(a.closed) })
	return a.srv.Close()
}

func (a *RuntimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == invocationNextPath:
		a.next(w, r)
	case r.Method == http.MethodPost && r.URL.Path == initErrorPath:
		a.post(w, r, "init/error", "")
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, invocationPathPrefix):
		id, kind, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, invocationPathPrefix), "/")
		if !ok || (kind != "response" && kind != "error") {
			http.NotFound(w, r)
			return
		}
		a.mu.Lock()
		known := id == a.requestID && id != ""
		a.mu.Unlock()
		if !known {
			// What Lambda answers for an unknown or finished request id.
			http.Error(w, `{"errorMessage":"invalid request id","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
			return
		}
		a.post(w, r, kind, id)
	default:
		http.NotFound(w, r)
	}
}

func (a *RuntimeAPI) next(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	a.mu.Lock()
	a.nexts++
	n := a.nexts
	if n == 1 {
		a.requestID = newRequestID()
	}
	id := a.requestID
	a.mu.Unlock()
	if n > 1 {
		if n == 2 {
			a.idle <- now
		}
		select { // no second invocation: wait like an idle sandbox
		case <-r.Context().Done():
		case <-a.closed:
		}
		return
	}
	a.firstNext <- now
	h := w.Header()
	h.Set(headerRequestID, id)
	h.Set(headerDeadlineMS, strconv.FormatInt(now.Add(a.Deadline).UnixMilli(), 10))
	h.Set(headerFunctionARN, a.FunctionARN)
	h.Set(headerTraceID, fmt.Sprintf("Root=1-%08x-%s;Sampled=0", now.Unix(), strings.ReplaceAll(id, "-", "")[:24]))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.Event)
}

func (a *RuntimeAPI) post(w http.ResponseWriter, r *http.Request, kind, id string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 6<<20)) // Lambda's response limit
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res := Result{Kind: kind, RequestID: id, ErrorType: r.Header.Get(headerFuncErrorType), Body: body, At: time.Now()}
	select {
	case a.results <- res:
	default: // nobody is reading any more
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s := hex.EncodeToString(b)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// errTimeout says which step of a run did not happen in time.
type errTimeout string

func (e errTimeout) Error() string { return "timed out waiting for " + string(e) }
