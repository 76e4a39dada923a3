package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
)

// env is a getenv over a fixed map: tests never read the process
// environment, so they pass whatever the developer's shell exports.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// With nothing set, every optional setting has its documented default.
func TestFromEnv_Defaults(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatalf("FromEnv(empty): %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"JobsTable", c.JobsTable, "criticizer-jobs"},
		{"DeliveriesTable", c.DeliveriesTable, "criticizer-deliveries"},
		{"PayloadBucket", c.PayloadBucket, "criticizer-payloads"},
		{"MailFrom", c.MailFrom, "Criticizer <criticizer@example.com>"},
		{"LogLevel", c.LogLevel, "info"},
		{"IdempotencyTTL", c.IdempotencyTTL, 720 * time.Hour},
		{"DeliveryLease", c.Notify.DeliveryLease, 2 * time.Minute},
		{"EvidenceMargin", c.EvidenceMargin, 5 * time.Minute},
		{"EvidenceCounterLag", c.EvidenceCounterLag, 2 * time.Minute},
		{"ProbeAddress", c.ProbeAddress, "success@simulator.amazonses.com"},
		{"AllowPrivateDiffs", c.AllowPrivateDiffs, false},
		{"WebhookSecret", c.WebhookSecret, ""},
		{"ConfigurationSet", c.ConfigurationSet, ""},
		{"SESStoreURL", c.SESStoreURL, ""},
		{"Endpoints.Local", c.Endpoints.Local(), false},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v; want %v", ck.name, ck.got, ck.want)
		}
	}
	for _, s := range job.Stages() {
		if q, ok := c.Queues.Queue[s]; !ok || q != "" {
			t.Errorf("Queue[%s] = %q (present %v); want present and empty", s, q, ok)
		}
		if q, ok := c.Queues.DLQ[s]; !ok || q != "" {
			t.Errorf("DLQ[%s] = %q (present %v); want present and empty", s, q, ok)
		}
	}
}

// Every variable overrides its default.
func TestFromEnv_Overrides(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{
		config.EnvJobsTable:         "prod-jobs",
		config.EnvDeliveriesTable:   "prod-deliveries",
		config.EnvPayloadBucket:     "prod-payloads",
		config.EnvWebhookSecret:     "s3cret-0123456789abcdef-0123456789",
		config.EnvMailFrom:          "Reviews <reviews@corp.example>",
		config.EnvConfigurationSet:  "criticizer-events",
		config.EnvIdempotencyTTL:    "168h",
		config.EnvDeliveryLease:     "45s",
		config.EnvEvidenceMargin:    "10m30s",
		config.EnvProbeAddress:      "off",
		config.EnvAllowPrivateDiffs: "true",
		config.EnvSESStoreURL:       "http://localhost:8005",
		config.EnvLogLevel:          "debug",
	}))
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"JobsTable", c.JobsTable, "prod-jobs"},
		{"DeliveriesTable", c.DeliveriesTable, "prod-deliveries"},
		{"PayloadBucket", c.PayloadBucket, "prod-payloads"},
		{"WebhookSecret", c.WebhookSecret, "s3cret-0123456789abcdef-0123456789"},
		{"MailFrom", c.MailFrom, "Reviews <reviews@corp.example>"},
		{"ConfigurationSet", c.ConfigurationSet, "criticizer-events"},
		{"IdempotencyTTL", c.IdempotencyTTL, 168 * time.Hour},
		{"DeliveryLease", c.Notify.DeliveryLease, 45 * time.Second},
		{"EvidenceMargin", c.EvidenceMargin, 10*time.Minute + 30*time.Second},
		{"ProbeAddress", c.ProbeAddress, ""},
		{"AllowPrivateDiffs", c.AllowPrivateDiffs, true},
		{"SESStoreURL", c.SESStoreURL, "http://localhost:8005"},
		{"LogLevel", c.LogLevel, "debug"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v; want %v", ck.name, ck.got, ck.want)
		}
	}
}

// The variable names are part of the deployment contract (Lambda
// environment, templates, docs): renaming one silently drops a setting.
func TestEnvNames_AreStable(t *testing.T) {
	names := map[string]string{
		config.EnvJobsTable:         "CRITICIZER_JOBS_TABLE",
		config.EnvDeliveriesTable:   "CRITICIZER_DELIVERIES_TABLE",
		config.EnvPayloadBucket:     "CRITICIZER_PAYLOAD_BUCKET",
		config.EnvWebhookSecret:     "CRITICIZER_WEBHOOK_SECRET",
		config.EnvMailFrom:          "CRITICIZER_MAIL_FROM",
		config.EnvConfigurationSet:  "CRITICIZER_SES_CONFIGURATION_SET",
		config.EnvIdempotencyTTL:    "CRITICIZER_IDEMPOTENCY_TTL",
		config.EnvDeliveryLease:     "CRITICIZER_DELIVERY_LEASE",
		config.EnvEvidenceMargin:    "CRITICIZER_EVIDENCE_MARGIN",
		config.EnvAllowPrivateDiffs: "CRITICIZER_ALLOW_PRIVATE_DIFF_URLS",
		config.EnvSESStoreURL:       "CRITICIZER_LOCAL_SES_STORE_URL",
		config.EnvLogLevel:          "LOG_LEVEL",
	}
	for got, want := range names {
		if got != want {
			t.Errorf("env name %q; want %q", got, want)
		}
	}
}

// R-STAGE-3: each stage has its own queue and its own dead-letter queue,
// read from CRITICIZER_<STAGE>_QUEUE_URL and CRITICIZER_<STAGE>_DLQ_URL.
func TestFromEnv_PerStageQueueAndDLQ(t *testing.T) {
	vars := map[string]string{
		"CRITICIZER_FETCH_QUEUE_URL":  "https://sqs.example/fetch",
		"CRITICIZER_FETCH_DLQ_URL":    "https://sqs.example/fetch-dlq",
		"CRITICIZER_LLM_QUEUE_URL":    "https://sqs.example/llm",
		"CRITICIZER_LLM_DLQ_URL":      "https://sqs.example/llm-dlq",
		"CRITICIZER_NOTIFY_QUEUE_URL": "https://sqs.example/notify",
		"CRITICIZER_NOTIFY_DLQ_URL":   "https://sqs.example/notify-dlq",
	}
	c, err := config.FromEnv(env(vars))
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	tests := []struct {
		stage    job.Stage
		queueEnv string
		dlqEnv   string
	}{
		{job.StageFetch, "CRITICIZER_FETCH_QUEUE_URL", "CRITICIZER_FETCH_DLQ_URL"},
		{job.StageLLM, "CRITICIZER_LLM_QUEUE_URL", "CRITICIZER_LLM_DLQ_URL"},
		{job.StageNotify, "CRITICIZER_NOTIFY_QUEUE_URL", "CRITICIZER_NOTIFY_DLQ_URL"},
	}
	for _, tt := range tests {
		t.Run(string(tt.stage), func(t *testing.T) {
			if got := config.QueueEnv(tt.stage); got != tt.queueEnv {
				t.Errorf("QueueEnv(%s) = %q; want %q", tt.stage, got, tt.queueEnv)
			}
			if got := config.DLQEnv(tt.stage); got != tt.dlqEnv {
				t.Errorf("DLQEnv(%s) = %q; want %q", tt.stage, got, tt.dlqEnv)
			}
			if got := c.Queues.Queue[tt.stage]; got != vars[tt.queueEnv] {
				t.Errorf("Queue[%s] = %q; want %q", tt.stage, got, vars[tt.queueEnv])
			}
			if got := c.Queues.DLQ[tt.stage]; got != vars[tt.dlqEnv] {
				t.Errorf("DLQ[%s] = %q; want %q", tt.stage, got, vars[tt.dlqEnv])
			}
		})
	}
	// Each stage's queues are distinct: no stage shares another's DLQ.
	seen := map[string]string{}
	for _, s := range job.Stages() {
		for kind, url := range map[string]string{"queue": c.Queues.Queue[s], "dlq": c.Queues.DLQ[s]} {
			if prev, dup := seen[url]; dup {
				t.Errorf("%s %s has the same URL as %s", s, kind, prev)
			}
			seen[url] = string(s) + " " + kind
		}
	}
	if len(c.Queues.Queue) != len(job.Stages()) || len(c.Queues.DLQ) != len(job.Stages()) {
		t.Errorf("Queues has %d queues and %d DLQs; want one of each per stage (%d)", len(c.Queues.Queue), len(c.Queues.DLQ), len(job.Stages()))
	}
}

// A bad duration is a configuration error that names the variable, so the
// operator knows what to fix; zero and negative durations are rejected too
// (a zero lease would let two workers send the same row).
// Rules: R-PRIVACY-2.
func TestFromEnv_InvalidDurationNamesVariable(t *testing.T) {
	vars := []string{config.EnvIdempotencyTTL, config.EnvDeliveryLease, config.EnvEvidenceMargin}
	values := []string{"abc", "10", "0", "0s", "-5m", "-1ns", "1 h", "720hours", "1d", "PT2M"}
	for _, name := range vars {
		for _, v := range values {
			t.Run(name+"="+v, func(t *testing.T) {
				c, err := config.FromEnv(env(map[string]string{name: v}))
				if err == nil {
					t.Fatalf("accepted %s=%q: %+v", name, v, c)
				}
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			})
		}
	}
}

// Valid durations in Go syntax are accepted, including compound ones.
func TestFromEnv_ValidDurations(t *testing.T) {
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"1ns", time.Nanosecond},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"720h", 720 * time.Hour},
		{"2.5m", 150 * time.Second},
	}
	for _, tt := range tests {
		c, err := config.FromEnv(env(map[string]string{config.EnvDeliveryLease: tt.v}))
		if err != nil {
			t.Errorf("%s=%q: %v", config.EnvDeliveryLease, tt.v, err)
			continue
		}
		if c.Notify.DeliveryLease != tt.want {
			t.Errorf("%s=%q: DeliveryLease = %v; want %v", config.EnvDeliveryLease, tt.v, c.Notify.DeliveryLease, tt.want)
		}
	}
}

// The boolean accepts Go's boolean spellings and rejects anything else,
// naming the variable: "yes" must not silently mean false.
func TestFromEnv_AllowPrivateDiffsBoolean(t *testing.T) {
	tests := []struct {
		v    string
		want bool
		ok   bool
	}{
		{"", false, true},
		{"true", true, true},
		{"TRUE", true, true},
		{"1", true, true},
		{"t", true, true},
		{"false", false, true},
		{"0", false, true},
		{"F", false, true},
		{"yes", false, false},
		{"no", false, false},
		{"on", false, false},
		{"enabled", false, false},
		{"2", false, false},
		{" true", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			c, err := config.FromEnv(env(map[string]string{config.EnvAllowPrivateDiffs: tt.v}))
			if !tt.ok {
				if err == nil {
					t.Fatalf("accepted %s=%q as %v", config.EnvAllowPrivateDiffs, tt.v, c.AllowPrivateDiffs)
				}
				if !strings.Contains(err.Error(), config.EnvAllowPrivateDiffs) {
					t.Errorf("error %q does not name %s", err, config.EnvAllowPrivateDiffs)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s=%q: %v", config.EnvAllowPrivateDiffs, tt.v, err)
			}
			if c.AllowPrivateDiffs != tt.want {
				t.Errorf("AllowPrivateDiffs = %v; want %v", c.AllowPrivateDiffs, tt.want)
			}
		})
	}
}

// An invalid value is reported even when everything else is valid, and
// nothing half-built is returned alongside the error.
func TestFromEnv_ErrorReturnsZeroConfig(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{
		config.EnvJobsTable:       "prod-jobs",
		config.EnvWebhookSecret:   "s3cret-0123456789abcdef-0123456789",
		config.EnvEvidenceMargin:  "soon",
		config.EnvDeliveryLease:   "1m",
		config.EnvIdempotencyTTL:  "24h",
		config.EnvDeliveriesTable: "prod-deliveries",
	}))
	if err == nil {
		t.Fatal("accepted CRITICIZER_EVIDENCE_MARGIN=soon")
	}
	if !strings.Contains(err.Error(), config.EnvEvidenceMargin) {
		t.Errorf("error %q does not name %s", err, config.EnvEvidenceMargin)
	}
	if c.WebhookSecret != "" || c.JobsTable != "" {
		t.Errorf("FromEnv returned a partly filled config with its error: %+v", c)
	}
}

// AWS endpoint overrides (emulators) follow the SDK's variables: a
// per-service one wins over AWS_ENDPOINT_URL.
func TestFromEnv_EndpointOverrides(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{
		"AWS_ENDPOINT_URL":          "http://localhost:4566",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://localhost:8000",
	}))
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	e := c.Endpoints
	if e.DynamoDB != "http://localhost:8000" || e.SQS != "http://localhost:4566" || e.SES != "http://localhost:4566" || e.S3 != "http://localhost:4566" {
		t.Errorf("Endpoints = %+v", e)
	}
	if !e.Local() {
		t.Error("Endpoints.Local() = false with overrides set")
	}
}
