package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
)

// invocations are what Lambda bills one function for: how many times it
// ran and for how long, each invocation rounded up to the millisecond.
type invocations struct {
	Count, Records int
	BilledMS       float64
}

// meter times every invocation of the local functions by function, as
// Lambda bills them, and tags their context so the counter and the log
// meter attribute what they do.
type meter struct {
	mu  sync.Mutex
	fns map[string]*invocations
}

func newMeter() *meter { return &meter{fns: map[string]*invocations{}} }

func (m *meter) record(fn string, records int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inv := m.fns[fn]
	if inv == nil {
		inv = &invocations{}
		m.fns[fn] = inv
	}
	inv.Count++
	inv.Records += records
	inv.BilledMS += math.Ceil(float64(d.Microseconds()) / 1000)
}

// sqs wraps an SQS-triggered function's handler (devstack's hook for
// each stage's and feedback's handler).
func (m *meter) sqs(fn string, h devstack.SQSHandler) devstack.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		t0 := time.Now()
		resp, err := h(WithTag(ctx, fn), ev)
		m.record(fn, len(ev.Records), time.Since(t0))
		return resp, err
	}
}

// stage is sqs for a pipeline stage.
func (m *meter) stage(s job.Stage, h devstack.SQSHandler) devstack.SQSHandler {
	return m.sqs(string(s), h)
}

func (m *meter) snapshot() map[string]invocations {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]invocations, len(m.fns))
	for k, v := range m.fns {
		out[k] = *v
	}
	return out
}

// logMeter counts the bytes the functions log, by function (the tag of
// the context a line is logged under), through the same JSON handler and
// redaction as in Lambda (obs.NewLogger) at the deployed level. Each line
// gets the "function" attribute the functions' loggers carry in Lambda
// (wire.FromEnv), so a line is as long as there.
type logMeter struct {
	mu    sync.Mutex
	tag   string
	bytes map[string]int64
	lines map[string]int64
	inner slog.Handler
}

func newLogMeter(level string) *logMeter {
	m := &logMeter{bytes: map[string]int64{}, lines: map[string]int64{}}
	m.inner = obs.NewLogger(logCounter{m}, level).Handler()
	return m
}

type logCounter struct{ m *logMeter }

// Write is called by the inner handler with one whole line, under m.mu.
func (w logCounter) Write(p []byte) (int, error) {
	w.m.bytes[w.m.tag] += int64(len(p))
	w.m.lines[w.m.tag]++
	return len(p), nil
}

func (m *logMeter) logger() *slog.Logger { return slog.New(&logView{m: m, h: m.inner}) }

// logView is the meter as a slog.Handler: its inner handler (carrying a
// logger.With's attributes), the meter's counts.
type logView struct {
	m *logMeter
	h slog.Handler
}

func (v *logView) Enabled(ctx context.Context, l slog.Level) bool { return v.h.Enabled(ctx, l) }

func (v *logView) Handle(ctx context.Context, r slog.Record) error {
	tag := tagOf(ctx)
	if tag != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("function", tag))
	}
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	v.m.tag = tag
	return v.h.Handle(ctx, r)
}

func (v *logView) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logView{m: v.m, h: v.h.WithAttrs(attrs)}
}

func (v *logView) WithGroup(name string) slog.Handler {
	return &logView{m: v.m, h: v.h.WithGroup(name)}
}

func (m *logMeter) snapshot() (bytes, lines map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bytes, lines = map[string]int64{}, map[string]int64{}
	for k, v := range m.bytes {
		bytes[k] = v
	}
	for k, v := range m.lines {
		lines[k] = v
	}
	return bytes, lines
}

var _ io.Writer = logCounter{}
