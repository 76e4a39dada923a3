package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// The evidence path's choices (R-EVIDENCE-2, R-EVIDENCE-9).
const (
	// EnvUncertainSend is what a send whose answer was lost does once the
	// evidence path has caught up past it with no event naming it:
	// resend (the default) or hold.
	EnvUncertainSend = "CRITICIZER_UNCERTAIN_SEND"
	// EnvSweepEvery is the sweeper's schedule: consecutive readings of the
	// feedback queue further apart than twice this break a run of clear
	// readings (internal/drain).
	EnvSweepEvery = "CRITICIZER_SWEEP_EVERY"
	// DefaultSweepEvery is the deployed schedule (every minute).
	DefaultSweepEvery = time.Minute
)

// readEvidence reads EnvUncertainSend and EnvSweepEvery.
func (c *Config) readEvidence(getenv func(string) string) error {
	p, err := delivery.ParseUncertainSend(strings.TrimSpace(getenv(EnvUncertainSend)))
	if err != nil {
		return fmt.Errorf("%s: %w", EnvUncertainSend, err)
	}
	c.UncertainSend = p
	if c.SweepEvery, err = duration(getenv, EnvSweepEvery, DefaultSweepEvery); err != nil {
		return err
	}
	if c.SweepEvery <= 0 {
		return fmt.Errorf("%s: want a positive duration, got %s", EnvSweepEvery, c.SweepEvery)
	}
	return nil
}
