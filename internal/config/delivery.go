package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The defaults of the durations the deployment writes out
// (internal/deploy), so that a deployment shows what it runs with.
const (
	// DefaultIdempotencyTTL is how long intake keeps an idempotency record.
	DefaultIdempotencyTTL = 30 * 24 * time.Hour
	// DefaultDeliveryLease is how long a claimed delivery is notify's.
	DefaultDeliveryLease = 2 * time.Minute
	// DefaultSweepStuckAfter and DefaultEvidenceWindow are the sweeper's
	// thresholds: a job unchanged this long is stuck; a sent delivery
	// without evidence this long is reconciled.
	DefaultSweepStuckAfter = 10 * time.Minute
	DefaultEvidenceWindow  = 15 * time.Minute
)

// readRetention reads how long state is kept: intake's idempotency
// records, and the TTL of jobs, delivery rows and audit items.
func (c *Config) readRetention(getenv func(string) string) error {
	var err error
	if c.IdempotencyTTL, err = duration(getenv, EnvIdempotencyTTL, DefaultIdempotencyTTL); err != nil {
		return err
	}
	// Retention: "0" keeps everything; the default is 90 days.
	c.Retention = DefaultRetention
	if v := strings.TrimSpace(getenv(EnvRetention)); v == "0" {
		c.Retention = 0
	} else if c.Retention, err = duration(getenv, EnvRetention, DefaultRetention); err != nil {
		return err
	}
	return nil
}

// readDelivery reads the delivery protocol's settings: the claim's lease, the
// evidence path (the publish bound, the counters' lag, the feedback queue
// the sweeper reads, probes), the sweeper's thresholds and the send rate.
func (c *Config) readDelivery(getenv func(string) string) error {
	var err error
	if c.Notify.DeliveryLease, err = duration(getenv, EnvDeliveryLease, DefaultDeliveryLease); err != nil {
		return err
	}
	if c.EvidenceMargin, err = duration(getenv, EnvEvidenceMargin, DefaultEvidenceMargin); err != nil {
		return err
	}
	if c.EvidenceCounterLag, err = duration(getenv, EnvCounterLag, DefaultCounterLag); err != nil {
		return err
	}
	if err = c.readEvidence(getenv); err != nil {
		return err
	}
	c.FeedbackQueueURL, c.FeedbackDLQURL = getenv(EnvFeedbackQueueURL), getenv(EnvFeedbackDLQURL)
	switch v := strings.TrimSpace(getenv(EnvProbeAddress)); v {
	case "":
		c.ProbeAddress = DefaultProbeAddress
	case "off":
	default:
		if !strings.Contains(v, "@") || strings.ContainsAny(v, " <>,") {
			return fmt.Errorf("%s: want a bare email address, or off", EnvProbeAddress)
		}
		c.ProbeAddress = v
	}
	if c.Sweep.StuckAfter, err = duration(getenv, EnvSweepStuckAfter, DefaultSweepStuckAfter); err != nil {
		return err
	}
	if c.Sweep.EvidenceWindow, err = duration(getenv, EnvEvidenceWindow, DefaultEvidenceWindow); err != nil {
		return err
	}
	c.Notify.MaxSendRate = DefaultMaxSendRate
	if v := strings.TrimSpace(getenv(EnvMaxSendRate)); v != "" {
		if c.Notify.MaxSendRate, err = strconv.Atoi(v); err != nil || c.Notify.MaxSendRate < 0 {
			return fmt.Errorf("%s: want a whole number of emails per second (0 turns the limit off), got %q", EnvMaxSendRate, v)
		}
	}
	if c.Notify.SESQuotaRecheck, err = sesQuotaRecheck(getenv); err != nil {
		return err
	}
	return c.readDeadlines(getenv)
}
