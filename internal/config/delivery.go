package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// readRetention reads how long state is kept: intake's idempotency
// records, and the TTL of jobs, delivery rows and audit items.
func (c *Config) readRetention(getenv func(string) string) error {
	var err error
	if c.IdempotencyTTL, err = duration(getenv, EnvIdempotencyTTL, 30*24*time.Hour); err != nil {
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

// readDelivery reads the outbox's settings: the claim's lease, the
// evidence path (the publish bound, the counters' lag, the feedback queue
// the sweeper reads, probes), the sweeper's thresholds and the send rate.
func (c *Config) readDelivery(getenv func(string) string) error {
	var err error
	if c.DeliveryLease, err = duration(getenv, EnvDeliveryLease, 2*time.Minute); err != nil {
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
	if c.SweepStuckAfter, err = duration(getenv, EnvSweepStuckAfter, 10*time.Minute); err != nil {
		return err
	}
	if c.EvidenceWindow, err = duration(getenv, EnvEvidenceWindow, 15*time.Minute); err != nil {
		return err
	}
	c.MaxSendRate = DefaultMaxSendRate
	if v := strings.TrimSpace(getenv(EnvMaxSendRate)); v != "" {
		if c.MaxSendRate, err = strconv.Atoi(v); err != nil || c.MaxSendRate < 0 {
			return fmt.Errorf("%s: want a whole number of emails per second (0 turns the limit off), got %q", EnvMaxSendRate, v)
		}
	}
	if c.SESQuotaRecheck, err = sesQuotaRecheck(getenv); err != nil {
		return err
	}
	return c.readDeadlines(getenv)
}
