package config

import (
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
)

// readEvidence reads EnvUncertainSend and EnvSweepEvery.
func (c *Config) readEvidence(getenv func(string) string) error {
	p, err := delivery.ParseUncertainSend(strings.TrimSpace(getenv(EnvUncertainSend)))
	if err != nil {
		return fmt.Errorf("%s: %w", EnvUncertainSend, err)
	}
	c.UncertainSend = p
	if c.Sweep.Every, err = duration(getenv, EnvSweepEvery, DefaultSweepEvery); err != nil {
		return err
	}
	if c.Sweep.Every <= 0 {
		return fmt.Errorf("%s: want a positive duration, got %s", EnvSweepEvery, c.Sweep.Every)
	}
	return nil
}
