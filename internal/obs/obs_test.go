package obs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/redact/redacttest"
)

// R-PRIVACY-1: secrets and raw PII must not leave in error text; the
// logger redacts every error attribute, whoever logs it.
func TestLogger_RedactsErrorAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, "info")
	token := "ghp_" + strings.Repeat("A1b2", 9)
	err := fmt.Errorf("get diff_url: %w", errors.New(`Get "https://git.example/diff?access_token=`+token+`": refused for ann@example.com`))
	log.ErrorContext(context.Background(), "failed", "error", err)
	log.With("error", "plain string with bob@example.org").InfoContext(context.Background(), "also")
	out := buf.String()
	for _, secret := range []string{token, "ann@example.com", "bob@example.org"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log output contains %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "get diff_url") {
		t.Fatalf("the error's safe text was lost:\n%s", out)
	}
}

// Regression: the logger redacted only "error" values, so a token or an
// address logged under any other key — or in the message — reached the log
// (R-PRIVACY-1). Every string value, stringer and the message are redacted
// now; numbers and ids stay readable.
func TestLogger_RedactsEveryStringAndTheMessage(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, "info")
	corpus := redacttest.Planted()
	log.Info(corpus, "value", corpus, "stringer", stringer(corpus))
	log.Info("ids stay", "job_id", "j_5zai7mm3evjrhd7cmesrypi3mwrrelpe", "delivery_id", "d_cm34ripgxie7jmxfci4nkk4646izl2za", "attempts", 3)
	out := buf.String()
	for _, lit := range redacttest.Literals() {
		if strings.Contains(out, lit) {
			t.Errorf("log output contains the planted %q", lit)
		}
	}
	for _, keep := range []string{`"job_id":"j_5zai7mm3evjrhd7cmesrypi3mwrrelpe"`, `"delivery_id":"d_cm34ripgxie7jmxfci4nkk4646izl2za"`, `"attempts":3`} {
		if !strings.Contains(out, keep) {
			t.Errorf("%s was lost", keep)
		}
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// Regression: metrics were written with InfoContext, so at LOG_LEVEL=warn
// or error no EMF line was written and every alarm on the code's metrics
// went silent. They are written at every allowed level; ordinary info
// lines still follow the level.
func TestMetric_EmittedAtEveryLogLevel(t *testing.T) {
	for _, level := range []string{"debug", "info", "warn", "error"} {
		var buf bytes.Buffer
		log := obs.NewLogger(&buf, level).With("function", "notify")
		obs.Metric(context.Background(), log, map[string]string{"Stage": "notify"}, map[string]float64{"DeadLetters": 1})
		log.Info("an info line")
		out := buf.String()
		if !strings.Contains(out, `"CloudWatchMetrics"`) || !strings.Contains(out, `"DeadLetters":1`) || !strings.Contains(out, `"function":"notify"`) {
			t.Errorf("LOG_LEVEL=%s: no EMF line: %s", level, out)
		}
		if info := strings.Contains(out, "an info line"); info != (level == "debug" || level == "info") {
			t.Errorf("LOG_LEVEL=%s: info line written %v", level, info)
		}
	}
}
