// Package config reads every function's settings from environment
// variables, the way Lambda passes them. The README's configuration table
// lists each variable; keep the two in step.
package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
)

// Config is the whole configuration. Each function uses the part it needs.
type Config struct {
	Endpoints         awsclient.Endpoints
	JobsTable         string
	DeliveriesTable   string
	PayloadBucket     string
	Queues            queue.URLs
	WebhookSecret     string
	MailFrom          string
	ConfigurationSet  string
	IdempotencyTTL    time.Duration
	DeliveryLease     time.Duration
	ReconcileGrace    time.Duration
	AllowPrivateDiffs bool
	// SweepStuckAfter and EvidenceWindow are the sweeper's thresholds.
	SweepStuckAfter time.Duration
	EvidenceWindow  time.Duration
	// SESStoreURL, when set, is the SES emulator's base URL; the notifier
	// then reads provider evidence from its store (local stack only).
	SESStoreURL string
	LogLevel    string
}

// Env names, in one place.
const (
	EnvJobsTable         = "CRITICIZER_JOBS_TABLE"
	EnvDeliveriesTable   = "CRITICIZER_DELIVERIES_TABLE"
	EnvPayloadBucket     = "CRITICIZER_PAYLOAD_BUCKET"
	EnvWebhookSecret     = "CRITICIZER_WEBHOOK_SECRET"
	EnvMailFrom          = "CRITICIZER_MAIL_FROM"
	EnvConfigurationSet  = "CRITICIZER_SES_CONFIGURATION_SET"
	EnvIdempotencyTTL    = "CRITICIZER_IDEMPOTENCY_TTL"
	EnvDeliveryLease     = "CRITICIZER_DELIVERY_LEASE"
	EnvReconcileGrace    = "CRITICIZER_RECONCILE_GRACE"
	EnvAllowPrivateDiffs = "CRITICIZER_ALLOW_PRIVATE_DIFF_URLS"
	EnvSweepStuckAfter   = "CRITICIZER_SWEEP_STUCK_AFTER"
	EnvEvidenceWindow    = "CRITICIZER_EVIDENCE_WINDOW"
	EnvSESStoreURL       = "CRITICIZER_LOCAL_SES_STORE_URL"
	EnvLogLevel          = "LOG_LEVEL"
)

// QueueEnv is the variable holding a stage's queue URL, e.g.
// CRITICIZER_FETCH_QUEUE_URL; DLQEnv likewise for its dead-letter queue.
func QueueEnv(s job.Stage) string { return "CRITICIZER_" + strings.ToUpper(string(s)) + "_QUEUE_URL" }

// DLQEnv is the variable holding a stage's dead-letter queue URL.
func DLQEnv(s job.Stage) string { return "CRITICIZER_" + strings.ToUpper(string(s)) + "_DLQ_URL" }

// FromEnv reads the configuration with defaults for what may be omitted.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Endpoints:        awsclient.EndpointsFromEnv(getenv),
		JobsTable:        or(getenv(EnvJobsTable), "criticizer-jobs"),
		DeliveriesTable:  or(getenv(EnvDeliveriesTable), "criticizer-deliveries"),
		PayloadBucket:    or(getenv(EnvPayloadBucket), "criticizer-payloads"),
		Queues:           queue.URLs{Queue: map[job.Stage]string{}, DLQ: map[job.Stage]string{}},
		WebhookSecret:    getenv(EnvWebhookSecret),
		MailFrom:         or(getenv(EnvMailFrom), "Criticizer <criticizer@example.com>"),
		ConfigurationSet: getenv(EnvConfigurationSet),
		SESStoreURL:      getenv(EnvSESStoreURL),
		LogLevel:         or(getenv(EnvLogLevel), "info"),
	}
	for _, s := range job.Stages() {
		c.Queues.Queue[s] = getenv(QueueEnv(s))
		c.Queues.DLQ[s] = getenv(DLQEnv(s))
	}
	var err error
	if c.IdempotencyTTL, err = duration(getenv, EnvIdempotencyTTL, 30*24*time.Hour); err != nil {
		return Config{}, err
	}
	if c.DeliveryLease, err = duration(getenv, EnvDeliveryLease, 2*time.Minute); err != nil {
		return Config{}, err
	}
	if c.ReconcileGrace, err = duration(getenv, EnvReconcileGrace, 3*time.Minute); err != nil {
		return Config{}, err
	}
	if c.SweepStuckAfter, err = duration(getenv, EnvSweepStuckAfter, 10*time.Minute); err != nil {
		return Config{}, err
	}
	if c.EvidenceWindow, err = duration(getenv, EnvEvidenceWindow, 15*time.Minute); err != nil {
		return Config{}, err
	}
	if v := getenv(EnvAllowPrivateDiffs); v != "" {
		if c.AllowPrivateDiffs, err = strconv.ParseBool(v); err != nil {
			return Config{}, fmt.Errorf("%s: %w", EnvAllowPrivateDiffs, err)
		}
	}
	return c, nil
}

func duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: want a positive duration such as 720h, got %q", name, v)
	}
	return d, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
