// Package obs holds logging and metrics: log/slog JSON lines, and CloudWatch
// Embedded Metric Format (EMF) lines, which CloudWatch turns into metrics
// without an API call from the function.
package obs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/redact"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "Criticizer"

// NewLogger returns a JSON logger at the named level (debug, info, warn,
// error).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: redactAttr}))
}

// redactAttr is the one place log lines are made safe (R-PRIVACY-1): the
// message and every string, error and stringer value pass through
// redact.Text, whatever its key — an error's text can carry an upstream
// answer, a URL with a token or an address, and so can any string a
// handler chose to log. Groups are walked by slog itself; other kinds
// (numbers, times, durations) cannot carry text.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact.Text(a.Value.String()))
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			return slog.String(a.Key, redact.Text(v.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, redact.Text(v.String()))
		}
	}
	return a
}

// Metric emits one EMF line with count metrics under the given dimensions.
// Dimension values must never hold PII: they are ids of stages and classes.
//
// The line goes through the logger's handler (the same JSON, the same
// redaction) but not through its level: alarms stand on these lines, and a
// function running with LOG_LEVEL=warn or error must still emit them.
func Metric(ctx context.Context, log *slog.Logger, dims map[string]string, counts map[string]float64) {
	names := make([]string, 0, len(dims))
	attrs := make([]any, 0, 2+len(dims)+len(counts))
	for k, v := range dims {
		names = append(names, k)
		attrs = append(attrs, slog.String(k, v))
	}
	defs := make([]map[string]string, 0, len(counts))
	for k, v := range counts {
		defs = append(defs, map[string]string{"Name": k, "Unit": "Count"})
		attrs = append(attrs, slog.Float64(k, v))
	}
	aws := map[string]any{
		"Timestamp": time.Now().UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  Namespace,
			"Dimensions": [][]string{names},
			"Metrics":    defs,
		}},
	}
	attrs = append(attrs, slog.Any("_aws", aws))
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "metric", 0)
	r.Add(attrs...)
	// Handle, not Log: Log would drop the line below the logger's level.
	_ = log.Handler().Handle(ctx, r)
}
