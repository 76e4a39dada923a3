package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
)

// running are the functions under RIE and what invokes them: a poller
// per event source mapping, the SES event bridge, the HTTP API.
type running struct {
	rie     map[string]*devstack.RIEFunction
	fns     map[string]function
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []string // function errors, in order
	batches map[string]int
}

// startFunctions starts each function's bootstrap under its own RIE with
// exactly its environment, and a poller for every event source mapping
// of the template, invoking the function the mapping names.
func startFunctions(ctx context.Context, o options, st *stack, b builds, fns map[string]function) (*running, error) {
	r := &running{rie: map[string]*devstack.RIEFunction{}, fns: fns, batches: map[string]int{}}
	logDir := filepath.Join(o.dir, "logs")
	for name, f := range fns {
		o.step("starting %s under RIE (timeout %s, %d variables)", name, f.settings.Timeout, len(f.env))
		fn, err := devstack.StartRIEExact(ctx, b.rie, b.run[name], name, f.env, f.settings.Timeout, logDir)
		if err != nil {
			r.stop()
			return nil, fmt.Errorf("%s: %w", f.id, err)
		}
		r.rie[name] = fn
	}
	sources, err := st.tpl.EventSources()
	if err != nil {
		r.stop()
		return nil, err
	}
	byID := map[string]string{}
	for name, f := range fns {
		byID[f.id] = name
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, es := range sources {
		name, ok := byID[es.Function]
		if !ok {
			r.stop()
			return nil, fmt.Errorf("%s: FunctionName %s is not a function the rehearsal runs", es.ID, es.Function)
		}
		q, ok := st.values.Resources[es.Queue]
		if !ok {
			r.stop()
			return nil, fmt.Errorf("%s: EventSourceArn: queue %s is not on the local stack", es.ID, es.Queue)
		}
		fn := r.rie[name]
		o.step("%s: %s → %s (batches of %d)", es.ID, es.Queue, name, es.BatchSize)
		p := &devstack.Poller{SQS: st.clients.SQS, QueueURL: q.Ref, QueueARN: q.Attrs["Arn"], BatchSize: int32(es.BatchSize),
			Timeout: fn.Timeout() + 2*time.Second, Log: quiet, Handler: r.record(name, fn.HandleSQS)}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); p.Run(pctx) }()
	}
	// SES publishes its events to the configuration set's topic; the
	// emulator publishes none, so the bridge does (devstack.SESEventBridge).
	bridge := &devstack.SESEventBridge{Store: &devstack.SESEmulator{BaseURL: st.svc.Ports.SESURL()}, SNS: st.clients.SNS,
		TopicARN: st.res.EventsTopicARN, ConfigurationSet: st.values.Resources["ConfigurationSet"].Ref, Log: quiet}
	r.wg.Add(1)
	go func() { defer r.wg.Done(); bridge.Run(pctx) }()
	return r, nil
}

// record counts a function's batches and keeps its errors.
func (r *running) record(name string, h devstack.SQSHandler) devstack.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := h(ctx, ev)
		r.mu.Lock()
		r.batches[name]++
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("%s: invocation failed: %v%s", r.fns[name].id, err, r.logTail(name)))
		}
		r.mu.Unlock()
		return resp, err
	}
}

// failed returns the function errors so far.
func (r *running) failed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// invoke sends one event to a function and keeps its error.
func (r *running) invoke(ctx context.Context, name string, payload []byte) ([]byte, error) {
	out, err := r.rie[name].Invoke(ctx, payload)
	if err != nil {
		err = fmt.Errorf("%s: invocation failed: %w%s", r.fns[name].id, err, r.logTail(name))
		r.mu.Lock()
		r.errs = append(r.errs, err.Error())
		r.mu.Unlock()
	}
	return out, err
}

// api is intake behind API Gateway's HTTP API (payload format 2.0).
func (r *running) api(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	out, err := r.invoke(ctx, "intake", payload)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, fmt.Errorf("IntakeFunction: the answer is not an HTTP API response: %w", err)
	}
	return resp, nil
}

// logTail is the last error a function logged, where an init failure
// says which variable it missed and a failed stage what it could not do.
func (r *running) logTail(name string) string {
	if e := r.lastError(name); e != "" {
		return "\n      last error in its log: " + e
	}
	return ""
}

// lastError is the last error a function's log holds: a JSON log line at
// WARN or ERROR with an error field, or the runtime's exit report.
func (r *running) lastError(name string) string {
	fn := r.rie[name]
	if fn == nil {
		return ""
	}
	b, err := os.ReadFile(fn.LogPath())
	if err != nil {
		return ""
	}
	// The function's own JSON lines say why; RIE's lines only that the
	// runtime exited.
	var last, runtime string
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct{ Level, Msg, Error string }
		switch {
		case json.Unmarshal([]byte(l), &rec) == nil && (rec.Level == "ERROR" || rec.Level == "WARN") && (rec.Error != "" || rec.Level == "ERROR"):
			last = rec.Msg
			if rec.Error != "" {
				last += ": " + rec.Error
			}
		case strings.Contains(l, "Runtime.ExitError") || strings.Contains(l, "errorMessage"):
			runtime = strings.TrimSpace(l)
		}
	}
	if last == "" {
		last = runtime
	}
	if len(last) > 400 {
		last = last[:400] + "…"
	}
	return last
}

// functionErrors names every function whose log holds an error, with it,
// but those whose invocation failure already said it.
func (r *running) functionErrors() []string {
	var out []string
	failed := strings.Join(r.failed(), "\n")
	for _, name := range deploy.Describe().Names() {
		if e := r.lastError(name); e != "" && !strings.Contains(failed, e) {
			out = append(out, fmt.Sprintf("%s: %s", r.fns[name].id, e))
		}
	}
	return out
}

// stop stops the pollers, the bridge and every RIE.
func (r *running) stop() {
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
	for _, fn := range r.rie {
		fn.Stop()
	}
}
